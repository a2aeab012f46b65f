#!/usr/bin/env python3
"""Generates ../src/schema.rs: the protobuf/JSON schema of every built-in Kubernetes kind, with
each struct's and field's Go type (for encoding/json's error texts) and which fields the official
Python client requires.

The schema is read from the Go runtime type descriptors of a kubectl binary (kubectl links every
k8s.io/api type because client-go's scheme registers them). Go keeps, for each struct type reachable
through reflection, its fields in declaration order with their struct tags
(`json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`) and their exact Go types (pointer or not,
slice, map, named struct). That is precisely what decides how kube-apiserver turns a protobuf body
into JSON: gogo-protobuf fills the Go struct, and encoding/json prints it. No .proto file or Go
toolchain is needed, and the result matches the client release exactly.

The `required` flags come from the official Python client's pydantic models (a field whose
annotation is not `Optional`), matched to the Go structs by walking both from the registered kinds
(see "Required fields" below); the client must be importable.

Usage (amd64 ELF binaries built with Go 1.21-1.23, e.g. the Google Cloud SDK's kubectl.1.32, and
`pip install kubernetes==37.0.2`):

    python3 tools/gen_schema.py /usr/lib/google-cloud-sdk/bin/kubectl.1.32 > src/schema.rs

(src/lib.rs marks the module `#[rustfmt::skip]`, so the one-field-per-line layout stays.)

The generated data derives from the Kubernetes API types (k8s.io/api, k8s.io/apimachinery;
Apache-2.0, the licence of this project).
"""

import re
import struct
import subprocess
import sys

# --------------------------------------------------------------------------------------------
# ELF and Go ABI (internal/abi, Go 1.21-1.23, 64-bit little endian) reading.

path = sys.argv[1]
data = open(path, "rb").read()
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "need a 64-bit little-endian ELF"

shoff = struct.unpack_from("<Q", data, 0x28)[0]
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
sections = []
for i in range(shnum):
    name, _typ, _flags, addr, off, size = struct.unpack_from("<IIQQQQ", data, shoff + i * shentsize)
    sections.append((name, addr, off, size))
strtab = sections[shstrndx][2]
secs = {}
for name, addr, off, size in sections:
    secs[data[strtab + name : data.index(b"\0", strtab + name)].decode()] = (addr, off, size)

phoff = struct.unpack_from("<Q", data, 0x20)[0]
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
segments = []
for i in range(phnum):
    p_type, _fl, p_offset, p_vaddr, _pa, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
    if p_type == 1:
        segments.append((p_vaddr, p_offset, p_filesz))


def off(va):
    for vaddr, offset, size in segments:
        if vaddr <= va < vaddr + size:
            return va - vaddr + offset
    raise ValueError(hex(va))


def u8(va):
    return data[off(va)]


def i32(va):
    return struct.unpack_from("<i", data, off(va))[0]


def u64(va):
    return struct.unpack_from("<Q", data, off(va))[0]


# `runtime.types` (the base of every nameOff/typeOff) is the start of .rodata for internally
# linked Go binaries; .typelink holds int32 offsets from it.
TYPES = secs[".rodata"][0]
_, tl_off, tl_size = secs[".typelink"]
typelinks = [struct.unpack_from("<i", data, tl_off + 4 * i)[0] for i in range(tl_size // 4)]


def varint(va):
    x = shift = 0
    while True:
        b = u8(va)
        va += 1
        x |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return x, va


def read_name(va):
    """abi.Name: flags byte, varint length, bytes, then (if flags&2) varint length + tag."""
    flags = u8(va)
    n, p = varint(va + 1)
    name = data[off(p) : off(p) + n].decode("utf-8", "replace")
    tag = None
    if flags & 2:
        tn, p2 = varint(p + n)
        tag = data[off(p2) : off(p2) + tn].decode("utf-8", "replace")
    return flags, name, tag


# abi.Kind values
BOOL, INT, INT8, INT16, INT32, INT64 = 1, 2, 3, 4, 5, 6
UINT, UINT8, UINT16, UINT32, UINT64 = 7, 8, 9, 10, 11
FLOAT32, FLOAT64 = 13, 14
ARRAY, CHAN, FUNC, INTERFACE, MAP, POINTER, SLICE, STRING, STRUCT = 17, 18, 19, 20, 21, 22, 23, 24, 25
# offset of abi.UncommonType after the kind-specific type struct
UNCOMMON_AT = {STRUCT: 80, POINTER: 56, SLICE: 56, MAP: 88, ARRAY: 72, INTERFACE: 80, FUNC: 56, CHAN: 64}

types = {}


def visit(t):
    if t == 0 or t in types:
        return
    tflag = u8(t + 20)
    kind = u8(t + 23) & 0x1F
    s = read_name(TYPES + i32(t + 40))[1]
    if tflag & 2:  # TFlagExtraStar
        s = s[1:]
    pkg = None
    if tflag & 1:  # TFlagUncommon
        po = i32(t + UNCOMMON_AT.get(kind, 48))
        pkg = read_name(TYPES + po)[1] if po else ""
    info = {"kind": kind, "str": s, "named": bool(tflag & 4), "pkg": pkg}
    types[t] = info
    if kind in (POINTER, SLICE, ARRAY, CHAN):
        info["elem"] = u64(t + 48)
        visit(info["elem"])
    elif kind == MAP:
        info["key"], info["elem"] = u64(t + 48), u64(t + 56)
        visit(info["key"])
        visit(info["elem"])
    elif kind == STRUCT:
        fields_ptr, n = u64(t + 56), u64(t + 64)
        fields = []
        for i in range(n):
            f = fields_ptr + 24 * i
            flags, name, tag = read_name(u64(f))
            fields.append({"name": name, "tag": tag or "", "embedded": bool(flags & 8), "type": u64(f + 8)})
        info["fields"] = fields
        for f in fields:
            visit(f["type"])
    ptr_to_this = i32(t + 44)
    if ptr_to_this:
        visit(TYPES + ptr_to_this)


sys.setrecursionlimit(100000)
for o in typelinks:
    visit(TYPES + o)


def full_name(t):
    i = types[t]
    return i["pkg"] + "." + i["str"].split(".", 1)[1]


# --------------------------------------------------------------------------------------------
# Schema extraction.

META = "k8s.io/apimachinery/pkg/apis/meta/v1"
SPECIAL = {
    META + ".Time": "Time",
    META + ".MicroTime": "MicroTime",
    META + ".FieldsV1": "FieldsV1",
    "k8s.io/apimachinery/pkg/api/resource.Quantity": "Quantity",
    "k8s.io/apimachinery/pkg/util/intstr.IntOrString": "IntOrString",
    "k8s.io/apimachinery/pkg/runtime.RawExtension": "RawExtension",
}
# Only the scalar kinds the Kubernetes API uses; anything else stops the generator (the decoder
# would need a new element type).
SCALARS = {BOOL: "Bool", INT32: "Int32", INT64: "Int64", STRING: "String"}
GROUPS = {
    "core": "", "admission": "admission.k8s.io", "admissionregistration": "admissionregistration.k8s.io",
    "apidiscovery": "apidiscovery.k8s.io", "apiserverinternal": "internal.apiserver.k8s.io",
    "apps": "apps", "authentication": "authentication.k8s.io", "authorization": "authorization.k8s.io",
    "autoscaling": "autoscaling", "batch": "batch", "certificates": "certificates.k8s.io",
    "coordination": "coordination.k8s.io", "discovery": "discovery.k8s.io", "events": "events.k8s.io",
    "extensions": "extensions", "flowcontrol": "flowcontrol.apiserver.k8s.io",
    "imagepolicy": "imagepolicy.k8s.io", "networking": "networking.k8s.io", "node": "node.k8s.io",
    "policy": "policy", "rbac": "rbac.authorization.k8s.io", "resource": "resource.k8s.io",
    "scheduling": "scheduling.k8s.io", "storage": "storage.k8s.io",
    "storagemigration": "storagemigration.k8s.io",
}
# metav1 kinds that metav1.AddToGroupVersion registers in every group version.
OPTION_KINDS = ["CreateOptions", "DeleteOptions", "GetOptions", "ListOptions", "PatchOptions", "UpdateOptions"]

messages = {}  # full name -> list of fields (None while being built)
order = []
go_types = {}  # full name -> reflect.Type.String(), e.g. "v1.PodSpec"


def go_type_string(t):
    """reflect.Type.String() of t with pointers dereferenced, as encoding/json's UnmarshalTypeError
    names the destination (its decoder allocates and follows pointers before storing)."""
    while types[t]["kind"] == POINTER:
        t = types[t]["elem"]
    return types[t]["str"]


def elem_of(t, where):
    """The element type of a non-container Go type."""
    i = types[t]
    k = i["kind"]
    if k == STRUCT:
        fn = full_name(t)
        if fn in SPECIAL:
            return SPECIAL[fn]
        if fn == META + ".Duration":
            raise SystemExit("metav1.Duration (JSON: time.Duration.String()) needs support at " + where)
        want(t)
        return "Message(%d)" % order.index(fn)
    if k == SLICE and types[i["elem"]]["kind"] == UINT8:
        return "Bytes"
    if k == SLICE and types[i["elem"]]["kind"] == STRING and i["named"]:
        # Named string slices used where protobuf cannot repeat (map values, metav1.Verbs) are
        # wrapped: `message ExtraValue { repeated string items = 1; }`.
        return "StringList"
    if k in SCALARS:
        return SCALARS[k]
    raise SystemExit("unsupported type %s at %s" % (i["str"], where))


def shape_of(t, where):
    i = types[t]
    k = i["kind"]
    if k == POINTER:
        return "Pointer", elem_of(i["elem"], where)
    if k == SLICE and types[i["elem"]]["kind"] != UINT8:
        if i["named"] and types[i["elem"]]["kind"] == STRING and where.endswith("APIResource.Verbs"):
            return "Value", "StringList"
        return "List", elem_of(i["elem"], where)
    if k == MAP:
        if types[i["key"]]["kind"] != STRING:
            raise SystemExit("non-string map key at " + where)
        return "Map", elem_of(i["elem"], where)
    return "Value", elem_of(t, where)


def want(t):
    fn = full_name(t)
    if fn in messages:
        return
    messages[fn] = None
    order.append(fn)
    go_types[fn] = types[t]["str"]
    fields = []
    for f in types[t]["fields"]:
        tags = dict(re.findall(r'(\w+):"([^"]*)"', f["tag"]))
        where = fn + "." + f["name"]
        if "protobuf" not in tags:
            # Only metav1.TypeMeta (filled from the envelope) and metav1.Table (never protobuf)
            # lack a protobuf tag; they cannot come from the wire.
            continue
        json_tag = tags.get("json", "")
        if json_tag == "-":
            continue
        parts = json_tag.split(",")
        json_name = parts[0]
        inline = f["embedded"] and json_name == ""
        if not json_name:
            json_name = f["name"]
        number = int(tags["protobuf"].split(",")[1])
        shape, elem = shape_of(f["type"], where)
        if inline and not (shape in ("Value", "Pointer") and elem.startswith("Message(")):
            raise SystemExit("inline non-struct at " + where)
        go_type = go_type_string(f["type"])
        item_type = go_type
        if shape in ("List", "Map"):
            item_type = go_type_string(types[f["type"]]["elem"])
        fields.append((number, json_name, "omitempty" in parts[1:], inline, shape, elem, go_type, item_type))
    messages[fn] = fields


kinds = []  # (apiVersion, kind, message full name)
group_versions = set()
for t, i in list(types.items()):
    if i["kind"] != STRUCT or not i["pkg"]:
        continue
    m = re.fullmatch(r"k8s\.io/api/([a-z0-9]+)/(v[a-z0-9]+)", i["pkg"])
    if not m:
        continue
    has_type_meta = any(f["embedded"] and types[f["type"]]["str"] == "v1.TypeMeta" for f in i["fields"])
    if not has_type_meta:
        continue
    group = GROUPS[m.group(1)]
    api_version = group + "/" + m.group(2) if group else m.group(2)
    group_versions.add(api_version)
    want(t)
    kinds.append((api_version, i["str"].split(".", 1)[1], full_name(t)))

meta_types = {full_name(t): t for t, i in types.items() if i["kind"] == STRUCT and i["pkg"] == META}
for kind in OPTION_KINDS:
    want(meta_types[META + "." + kind])
    for gv in sorted(group_versions | {"meta.k8s.io/v1"}):
        kinds.append((gv, kind, META + "." + kind))
want(meta_types[META + ".Status"])
for gv in ("meta.k8s.io/v1", "v1"):
    kinds.append((gv, "Status", META + ".Status"))
kinds = sorted(set(kinds))

# --------------------------------------------------------------------------------------------
# Required fields: those the official Python client's models require (a non-Optional pydantic
# field). Its typed clients reject an object lacking one, so kgc reports them. Each Go struct is
# matched to its Python model by walking both from the registered kinds: a kind's model is named
# after it (`V1Deployment`, or with the package prefix the generator adds on name clashes,
# `CoreV1Event`), a field's model is the class its `openapi_types` names, and embedded
# (`json:",inline"`) structs are flattened into their parent's model, as the OpenAPI schema
# flattens them.

try:
    import kubernetes.client.models as pymodels
except ImportError:
    raise SystemExit("needs the official Python client: pip install kubernetes==37.0.2")

required = {}  # (message full name, json name) -> bool
py_model = {}  # message full name -> Python model class name
seen = set()


def py_item_class(openapi_type):
    """The model class inside an `openapi_types` entry (`List[V1Container]`, `Dict[str, V1X]`)."""
    t = openapi_type
    while True:
        if t.startswith("List[") and t.endswith("]"):
            t = t[5:-1]
        elif t.startswith("Dict[str, ") and t.endswith("]"):
            t = t[10:-1]
        else:
            break
    return getattr(pymodels, t, None) if t[:1].isupper() else None


def map_message(fn, cls):
    key = (fn, cls.__name__)
    if key in seen:
        return
    seen.add(key)
    py_model.setdefault(fn, cls.__name__)
    attr_of = {json: attr for attr, json in cls.attribute_map.items()}
    # pydantic renames attributes it cannot hold (`_continue` is `var_continue`): match by wire name.
    field_of = {f.serialization_alias or name: f for name, f in cls.model_fields.items()}
    for _number, json_name, _omitempty, inline, _shape, elem, _go, _item in messages[fn]:
        sub = int(elem[len("Message("):-1]) if elem.startswith("Message(") else None
        if inline:
            map_message(order[sub], cls)
            continue
        attr = attr_of.get(json_name)
        if attr is None:
            continue  # a field the client release does not have: nothing to require
        flag = field_of[json_name].is_required()
        if required.setdefault((fn, json_name), flag) != flag:
            # A struct embedded in several models that disagree: the schema cannot say it.
            raise SystemExit("%s.%s is required in some models only (%s)" % (fn, json_name, cls.__name__))
        if sub is not None:
            sub_cls = py_item_class(cls.openapi_types[attr])
            if sub_cls is not None:
                map_message(order[sub], sub_cls)


def kind_model(fn, kind):
    pkg, version = fn.rsplit(".", 1)[0].rsplit("/", 2)[-2:]
    version = version[0].upper() + version[1:]
    for name in (pkg.capitalize() + version + kind, version + kind):
        cls = getattr(pymodels, name, None)
        if cls is not None and hasattr(cls, "attribute_map"):
            return cls
    return None


unmodelled = []
for gv, kind, fn in kinds:
    cls = kind_model(fn, kind)
    if cls is None:
        unmodelled.append(gv + " " + kind)
        continue
    go_json = {f[1] for f in messages[fn] if not f[3]}
    if len(go_json - set(cls.attribute_map.values())) > len(go_json) // 2:
        raise SystemExit("%s %s: %s does not look like its model" % (gv, kind, cls.__name__))
    map_message(fn, cls)

# --------------------------------------------------------------------------------------------
# Output.

version = ""
try:
    version = subprocess.run([path, "version", "--client"], capture_output=True, text=True, timeout=20).stdout.split("\n")[0]
except Exception:  # noqa: BLE001 - the version line is informative only
    pass

out = sys.stdout
out.write("// @generated by tools/gen_schema.py from the Go type descriptors of\n")
out.write("// %s (%s). Do not edit.\n" % (path.rsplit("/", 1)[-1], version.strip() or "unknown version"))
out.write("// Derived from the Kubernetes API types (k8s.io/api, k8s.io/apimachinery), Apache-2.0.\n\n")
out.write("use crate::schema_types::{Elem::*, Field, Message, Shape::*};\n\n")
out.write("pub(crate) static MESSAGES: &[Message] = &[\n")
for fn in order:
    model = py_model.get(fn)
    out.write('    // %s%s\n' % (fn, " (Python: %s)" % model if model else ""))
    out.write('    Message {\n        go_type: "%s",\n        fields: &[\n' % go_types[fn])
    for number, json_name, omitempty, inline, shape, elem, go_type, item_type in messages[fn]:
        out.write(
            '            Field { number: %d, json: "%s", omitempty: %s, inline: %s, shape: %s, elem: %s, go_type: "%s", item_type: "%s", required: %s },\n'
            % (number, json_name, str(omitempty).lower(), str(inline).lower(), shape, elem, go_type, item_type,
               str(required.get((fn, json_name), False)).lower())
        )
    out.write("        ],\n    },\n")
out.write("];\n\n")
out.write("/// `(apiVersion, kind, index into MESSAGES)`, sorted.\n")
out.write("pub(crate) static KINDS: &[(&str, &str, u16)] = &[\n")
for gv, kind, fn in kinds:
    out.write('    ("%s", "%s", %d),\n' % (gv, kind, order.index(fn)))
out.write("];\n")
print("kinds without a Python model: " + ", ".join(k for k in unmodelled if not k.endswith("Options")), file=sys.stderr)
print("%d messages (%d matched to Python models), %d kinds (%d without a model), %d required fields"
      % (len(order), len(py_model), len(kinds), len(unmodelled), sum(required.values())), file=sys.stderr)
