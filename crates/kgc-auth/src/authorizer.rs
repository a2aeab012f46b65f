//! The RBAC authorizer and its index.
//!
//! Upstream (`rbac.go` over `rule.go`'s `DefaultRuleResolver.VisitRulesFor`) walks every
//! ClusterRoleBinding, then every RoleBinding of the request's namespace, and asks each whether
//! one of its subjects is the user. Here bindings are indexed by the subject key they match —
//! the user name (User subjects and ServiceAccount subjects, whose user name is
//! `system:serviceaccount:NS:NAME`) or the group name — and, below that, by namespace. A
//! decision looks up the user's name and each of its groups and visits only those bindings, so
//! its cost does not grow with the number of bindings in the cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kgc_meta::gojson::go_quote;
use serde_json::{Map, Value, json};

use crate::rule::{PolicyRule, parse_rules};
use crate::{Attributes, Decision, Error, RBAC_GROUP, UserInfo};

/// The kind a `roleRef` names. Anything else resolves to an error and grants nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
enum RoleRefKind {
    Role,
    ClusterRole,
    /// Unsupported or unparseable; the string is what upstream's error quotes.
    Invalid(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SubjectKind {
    User,
    Group,
    ServiceAccount,
}

impl SubjectKind {
    fn as_str(self) -> &'static str {
        match self {
            SubjectKind::User => "User",
            SubjectKind::Group => "Group",
            SubjectKind::ServiceAccount => "ServiceAccount",
        }
    }
}

#[derive(Debug, Clone)]
struct Subject {
    kind: SubjectKind,
    name: String,
    namespace: String,
}

/// A RoleBinding (`namespace` set) or ClusterRoleBinding (`namespace` empty).
#[derive(Debug)]
pub(crate) struct Binding {
    namespace: String,
    name: String,
    role_kind: RoleRefKind,
    role_name: String,
    subjects: Vec<Subject>,
}

/// The index key a subject matches on, or `None` when it can match no one
/// (`appliesToUser`: a ServiceAccount subject without a namespace in a ClusterRoleBinding).
enum SubjectKey {
    User(String),
    Group(String),
}

impl Binding {
    fn subject_key(&self, s: &Subject) -> Option<SubjectKey> {
        match s.kind {
            SubjectKind::User => Some(SubjectKey::User(s.name.clone())),
            SubjectKind::Group => Some(SubjectKey::Group(s.name.clone())),
            SubjectKind::ServiceAccount => {
                // The namespace defaults to the binding's, so a RoleBinding can name a local
                // service account without qualifying it.
                let ns = if s.namespace.is_empty() {
                    &self.namespace
                } else {
                    &s.namespace
                };
                (!ns.is_empty())
                    .then(|| SubjectKey::User(UserInfo::service_account_name(ns, &s.name)))
            }
        }
    }

    fn applies_to(&self, s: &Subject, user: &UserInfo) -> bool {
        match self.subject_key(s) {
            Some(SubjectKey::User(name)) => name == user.name,
            Some(SubjectKey::Group(g)) => user.groups.contains(&g),
            None => false,
        }
    }

    /// `clusterRoleBindingDescriber` / `roleBindingDescriber`, for the allow reason.
    fn describe(&self, user: &UserInfo) -> String {
        let kind = match &self.role_kind {
            RoleRefKind::Role => "Role",
            RoleRefKind::ClusterRole => "ClusterRole",
            RoleRefKind::Invalid(k) => k,
        };
        let subject = self
            .subjects
            .iter()
            .find(|s| self.applies_to(s, user))
            .map(|s| {
                let name = match s.kind {
                    SubjectKind::ServiceAccount if s.namespace.is_empty() => {
                        format!("{}/{}", s.name, self.namespace)
                    }
                    SubjectKind::ServiceAccount => format!("{}/{}", s.name, s.namespace),
                    _ => s.name.clone(),
                };
                format!("{} {}", s.kind.as_str(), go_quote(&name))
            })
            .unwrap_or_default();
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding {} of {kind} {} to {subject}",
                go_quote(&self.name),
                go_quote(&self.role_name)
            )
        } else {
            format!(
                "RoleBinding {} of {kind} {} to {subject}",
                go_quote(&format!("{}/{}", self.name, self.namespace)),
                go_quote(&self.role_name)
            )
        }
    }
}

/// The bindings one subject key appears in: cluster-wide, and per namespace. Keyed by binding
/// name so updates and removals are direct and iteration order is stable.
#[derive(Debug, Default, Clone)]
struct SubjectIndex {
    cluster: BTreeMap<String, Arc<Binding>>,
    namespaced: HashMap<String, BTreeMap<String, Arc<Binding>>>,
}

impl SubjectIndex {
    fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.namespaced.is_empty()
    }
}

/// The RBAC authorizer: every Role, ClusterRole, RoleBinding and ClusterRoleBinding, parsed
/// once and indexed by subject.
///
/// Feed it with [`Authorizer::apply`] and [`Authorizer::remove`] as RBAC objects change (from a
/// watch), and share it behind an `RwLock`: decisions take `&self` and never allocate on the
/// allow path.
#[derive(Debug, Default, Clone)]
pub struct Authorizer {
    cluster_roles: HashMap<String, Vec<PolicyRule>>,
    roles: HashMap<String, HashMap<String, Vec<PolicyRule>>>,
    cluster_role_bindings: HashMap<String, Arc<Binding>>,
    role_bindings: HashMap<String, HashMap<String, Arc<Binding>>>,
    by_user: HashMap<String, SubjectIndex>,
    by_group: HashMap<String, SubjectIndex>,
}

/// The answer to a SubjectAccessReview (`SubjectAccessReviewStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessReview {
    pub allowed: bool,
    /// `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "y" to User "z"` when allowed;
    /// the deny reason (usually empty) otherwise; empty for `system:masters`.
    pub reason: String,
}

impl AccessReview {
    /// The `status` of a SubjectAccessReview (empty strings omitted, as upstream omits them).
    pub fn to_json(&self) -> Value {
        let mut o = Map::new();
        o.insert("allowed".into(), json!(self.allowed));
        if !self.reason.is_empty() {
            o.insert("reason".into(), json!(self.reason));
        }
        Value::Object(o)
    }
}

/// One entry of `SubjectRulesReviewStatus.resourceRules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
}

/// One entry of `SubjectRulesReviewStatus.nonResourceRules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonResourceRule {
    pub verbs: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

/// What a user may do in a namespace: the answer to a SelfSubjectRulesReview, which
/// `kubectl auth can-i --list` prints.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RulesReview {
    pub resource_rules: Vec<ResourceRule>,
    pub non_resource_rules: Vec<NonResourceRule>,
    /// Always false for RBAC (every rule is enumerable); kept for the wire format.
    pub incomplete: bool,
    /// Roles referenced by applicable bindings that do not exist, in upstream's wording.
    pub evaluation_error: String,
}

impl RulesReview {
    /// The `status` of a SelfSubjectRulesReview.
    pub fn to_json(&self) -> Value {
        let omit_empty = |o: &mut Map<String, Value>, k: &str, v: &[String]| {
            if !v.is_empty() {
                o.insert(k.to_owned(), json!(v));
            }
        };
        let resource_rules: Vec<Value> = self
            .resource_rules
            .iter()
            .map(|r| {
                let mut o = Map::new();
                o.insert("verbs".into(), json!(r.verbs));
                omit_empty(&mut o, "apiGroups", &r.api_groups);
                omit_empty(&mut o, "resources", &r.resources);
                omit_empty(&mut o, "resourceNames", &r.resource_names);
                Value::Object(o)
            })
            .collect();
        let non_resource_rules: Vec<Value> = self
            .non_resource_rules
            .iter()
            .map(|r| {
                let mut o = Map::new();
                o.insert("verbs".into(), json!(r.verbs));
                omit_empty(&mut o, "nonResourceURLs", &r.non_resource_urls);
                Value::Object(o)
            })
            .collect();
        let mut o = Map::new();
        o.insert("resourceRules".into(), Value::Array(resource_rules));
        o.insert("nonResourceRules".into(), Value::Array(non_resource_rules));
        o.insert("incomplete".into(), json!(self.incomplete));
        if !self.evaluation_error.is_empty() {
            o.insert("evaluationError".into(), json!(self.evaluation_error));
        }
        Value::Object(o)
    }
}

/// apimachinery's `utilerrors.NewAggregate(errs).Error()`: one message as is, several
/// de-duplicated inside `[a, b]`.
pub(crate) fn aggregate_errors(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [] => String::new(),
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn str_at<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

impl Authorizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Upserts one RBAC object (Role, ClusterRole, RoleBinding or ClusterRoleBinding, by its
    /// `kind`), replacing whatever this authorizer held for it.
    ///
    /// Invalid parts are dropped and grant nothing: a rule that does not parse, a subject
    /// without a known kind or a name, a roleRef that is not a Role or ClusterRole of
    /// `rbac.authorization.k8s.io`. The rest takes effect and [`Error::Malformed`] reports what
    /// was dropped. The previous version is always replaced, so an update that breaks an object
    /// revokes what it granted instead of leaving the old grant in place.
    pub fn apply(&mut self, obj: &Value) -> Result<(), Error> {
        let kind = str_at(obj, "kind");
        let meta = obj.get("metadata").unwrap_or(&Value::Null);
        let name = str_at(meta, "name");
        let namespace = str_at(meta, "namespace");
        let namespaced = match kind {
            "Role" | "RoleBinding" => true,
            "ClusterRole" | "ClusterRoleBinding" => false,
            other => return Err(Error::UnsupportedKind(other.to_owned())),
        };
        if name.is_empty() {
            return Err(Error::MissingIdentity {
                kind: kind.to_owned(),
                field: "metadata.name",
            });
        }
        if namespaced && namespace.is_empty() {
            return Err(Error::MissingIdentity {
                kind: kind.to_owned(),
                field: "metadata.namespace",
            });
        }
        let namespace = if namespaced { namespace } else { "" };
        let mut problems: Vec<(String, String)> = Vec::new();
        match kind {
            "Role" | "ClusterRole" => {
                let (rules, p) = parse_rules(obj);
                problems = p;
                if namespaced {
                    self.roles
                        .entry(namespace.to_owned())
                        .or_default()
                        .insert(name.to_owned(), rules);
                } else {
                    self.cluster_roles.insert(name.to_owned(), rules);
                }
            }
            _ => {
                let binding = parse_binding(obj, namespace, name, &mut problems);
                self.remove_binding(namespace, name);
                self.insert_binding(Arc::new(binding));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(Error::Malformed {
                kind: kind.to_owned(),
                name: if namespace.is_empty() {
                    name.to_owned()
                } else {
                    format!("{namespace}/{name}")
                },
                problems: problems
                    .into_iter()
                    .map(|(f, why)| format!("{f}: {why}"))
                    .collect(),
            })
        }
    }

    /// Forgets one object. `namespace` is ignored for cluster-scoped kinds; unknown kinds and
    /// objects never applied are no-ops.
    pub fn remove(&mut self, kind: &str, namespace: &str, name: &str) {
        match kind {
            "Role" => {
                if let Some(m) = self.roles.get_mut(namespace) {
                    m.remove(name);
                    if m.is_empty() {
                        self.roles.remove(namespace);
                    }
                }
            }
            "ClusterRole" => {
                self.cluster_roles.remove(name);
            }
            "RoleBinding" if !namespace.is_empty() => self.remove_binding(namespace, name),
            "ClusterRoleBinding" => self.remove_binding("", name),
            _ => {}
        }
    }

    fn insert_binding(&mut self, b: Arc<Binding>) {
        for s in &b.subjects {
            let idx = match b.subject_key(s) {
                Some(SubjectKey::User(u)) => self.by_user.entry(u).or_default(),
                Some(SubjectKey::Group(g)) => self.by_group.entry(g).or_default(),
                None => continue,
            };
            let slot = if b.namespace.is_empty() {
                &mut idx.cluster
            } else {
                idx.namespaced.entry(b.namespace.clone()).or_default()
            };
            slot.insert(b.name.clone(), Arc::clone(&b));
        }
        if b.namespace.is_empty() {
            self.cluster_role_bindings.insert(b.name.clone(), b);
        } else {
            self.role_bindings
                .entry(b.namespace.clone())
                .or_default()
                .insert(b.name.clone(), b);
        }
    }

    fn remove_binding(&mut self, namespace: &str, name: &str) {
        let old = if namespace.is_empty() {
            self.cluster_role_bindings.remove(name)
        } else {
            let Some(m) = self.role_bindings.get_mut(namespace) else {
                return;
            };
            let old = m.remove(name);
            if m.is_empty() {
                self.role_bindings.remove(namespace);
            }
            old
        };
        let Some(old) = old else { return };
        for s in &old.subjects {
            let (map, key) = match old.subject_key(s) {
                Some(SubjectKey::User(u)) => (&mut self.by_user, u),
                Some(SubjectKey::Group(g)) => (&mut self.by_group, g),
                None => continue,
            };
            let Some(idx) = map.get_mut(&key) else {
                continue;
            };
            if namespace.is_empty() {
                idx.cluster.remove(name);
            } else if let Some(m) = idx.namespaced.get_mut(namespace) {
                m.remove(name);
                if m.is_empty() {
                    idx.namespaced.remove(namespace);
                }
            }
            if idx.is_empty() {
                map.remove(&key);
            }
        }
    }

    /// `GetRoleReferenceRules`: the rules a binding grants, or upstream's error when its role
    /// is missing or of an unsupported kind.
    fn role_rules(&self, b: &Binding) -> Result<&[PolicyRule], String> {
        role_ref_rules(self, &b.role_kind, &b.role_name, &b.namespace)
    }

    /// The subject indexes that can apply to `user`: its name, then each of its groups.
    fn indexes<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a SubjectIndex> {
        self.by_user
            .get(&user.name)
            .into_iter()
            .chain(user.groups.iter().filter_map(|g| self.by_group.get(g)))
    }

    /// Every binding that applies to `user` in `namespace`, each once, in upstream's visiting
    /// order: ClusterRoleBindings, then RoleBindings of the namespace (each by name).
    fn applicable<'a>(&'a self, user: &'a UserInfo, namespace: &str) -> Vec<&'a Binding> {
        let mut cluster: BTreeMap<&'a str, &'a Binding> = BTreeMap::new();
        let mut local: BTreeMap<&'a str, &'a Binding> = BTreeMap::new();
        for idx in self.indexes(user) {
            for (name, b) in &idx.cluster {
                cluster.insert(name, b);
            }
            if !namespace.is_empty()
                && let Some(m) = idx.namespaced.get(namespace)
            {
                for (name, b) in m {
                    local.insert(name, b);
                }
            }
        }
        cluster.into_values().chain(local.into_values()).collect()
    }

    /// Whether `attrs` is allowed: `system:masters` always is; otherwise some rule of some
    /// binding that applies to the user must allow it.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.is_superuser() {
            return Decision::Allow;
        }
        let mut errors: Vec<String> = Vec::new();
        for idx in self.indexes(&attrs.user) {
            let local = if attrs.namespace.is_empty() {
                None
            } else {
                idx.namespaced.get(&attrs.namespace)
            };
            for b in idx
                .cluster
                .values()
                .chain(local.into_iter().flat_map(|m| m.values()))
            {
                match self.role_rules(b) {
                    Ok(rules) => {
                        if rules.iter().any(|r| r.allows(attrs)) {
                            return Decision::Allow;
                        }
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        errors.sort();
        Decision::Deny {
            reason: deny_reason(&errors),
        }
    }

    /// A SubjectAccessReview: the decision with upstream's reason (which binding allowed it).
    pub fn review(&self, attrs: &Attributes) -> AccessReview {
        if attrs.user.is_superuser() {
            return AccessReview {
                allowed: true,
                reason: String::new(),
            };
        }
        let mut errors = Vec::new();
        for b in self.applicable(&attrs.user, &attrs.namespace) {
            match self.role_rules(b) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(attrs)) {
                        return AccessReview {
                            allowed: true,
                            reason: format!("RBAC: allowed by {}", b.describe(&attrs.user)),
                        };
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        AccessReview {
            allowed: false,
            reason: deny_reason(&errors),
        }
    }

    /// `RulesFor`: every rule that applies to `user` in `namespace`, in visiting order, and the
    /// resolution errors met on the way.
    pub(crate) fn policy_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> (Vec<&PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        for b in self.applicable(user, namespace) {
            match self.role_rules(b) {
                Ok(r) => rules.extend(r),
                Err(e) => errors.push(e),
            }
        }
        (rules, errors)
    }

    /// SelfSubjectRulesReview: the resource and non-resource rules that apply to `user` in
    /// `namespace` (cluster-wide rules included), as `kubectl auth can-i --list` shows them.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesReview {
        let (rules, errors) = self.policy_rules_for(user, namespace);
        let mut review = RulesReview {
            evaluation_error: aggregate_errors(&errors),
            ..RulesReview::default()
        };
        for r in rules {
            if !r.resources.is_empty() {
                review.resource_rules.push(ResourceRule {
                    verbs: r.verbs.clone(),
                    api_groups: r.api_groups.clone(),
                    resources: r.resources.clone(),
                    resource_names: r.resource_names.clone(),
                });
            }
            if !r.non_resource_urls.is_empty() {
                review.non_resource_rules.push(NonResourceRule {
                    verbs: r.verbs.clone(),
                    non_resource_urls: r.non_resource_urls.clone(),
                });
            }
        }
        review
    }

    pub(crate) fn role(&self, namespace: &str, name: &str) -> Option<&[PolicyRule]> {
        self.roles
            .get(namespace)
            .and_then(|m| m.get(name))
            .map(Vec::as_slice)
    }

    pub(crate) fn cluster_role(&self, name: &str) -> Option<&[PolicyRule]> {
        self.cluster_roles.get(name).map(Vec::as_slice)
    }
}

/// `GetRoleReferenceRules` over the authorizer's roles.
fn role_ref_rules<'a>(
    a: &'a Authorizer,
    kind: &RoleRefKind,
    name: &str,
    binding_namespace: &str,
) -> Result<&'a [PolicyRule], String> {
    match kind {
        RoleRefKind::Role => a
            .role(binding_namespace, name)
            .ok_or_else(|| format!("role.{RBAC_GROUP} {} not found", go_quote(name))),
        RoleRefKind::ClusterRole => a
            .cluster_role(name)
            .ok_or_else(|| format!("clusterrole.{RBAC_GROUP} {} not found", go_quote(name))),
        RoleRefKind::Invalid(k) => Err(format!("unsupported role reference kind: {}", go_quote(k))),
    }
}

/// The rules a `roleRef` object (`{kind, name, apiGroup}`) resolves to for a binding in
/// `binding_namespace` ("" for a ClusterRoleBinding); used by the escalation checks.
pub(crate) fn resolve_role_ref<'a>(
    a: &'a Authorizer,
    role_ref: &Value,
    binding_namespace: &str,
) -> Result<&'a [PolicyRule], String> {
    let mut problems = Vec::new();
    let (kind, name) = parse_role_ref(role_ref, &mut problems);
    role_ref_rules(a, &kind, &name, binding_namespace)
}

/// Upstream's RBAC deny reason: empty, or `RBAC: ` and the aggregated resolution errors.
fn deny_reason(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!("RBAC: {}", aggregate_errors(errors))
    }
}

fn parse_role_ref(v: &Value, problems: &mut Vec<(String, String)>) -> (RoleRefKind, String) {
    let Some(o) = v.as_object() else {
        problems.push(("roleRef".into(), "must be an object".into()));
        return (RoleRefKind::Invalid(String::new()), String::new());
    };
    let field = |k: &str, problems: &mut Vec<(String, String)>| match o.get(k) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            problems.push((format!("roleRef.{k}"), "must be a string".into()));
            String::new()
        }
    };
    let kind = field("kind", problems);
    let name = field("name", problems);
    let group = field("apiGroup", problems);
    // `apiGroup` defaults to the RBAC group; any other group names a role RBAC does not know.
    if !group.is_empty() && group != RBAC_GROUP {
        problems.push((
            "roleRef.apiGroup".into(),
            format!("must be {RBAC_GROUP:?}, not {group:?}"),
        ));
        return (RoleRefKind::Invalid(kind), name);
    }
    let kind = match kind.as_str() {
        "Role" => RoleRefKind::Role,
        "ClusterRole" => RoleRefKind::ClusterRole,
        _ => {
            problems.push(("roleRef.kind".into(), format!("unsupported kind {kind:?}")));
            RoleRefKind::Invalid(kind)
        }
    };
    (kind, name)
}

fn parse_binding(
    obj: &Value,
    namespace: &str,
    name: &str,
    problems: &mut Vec<(String, String)>,
) -> Binding {
    let (role_kind, role_name) =
        parse_role_ref(obj.get("roleRef").unwrap_or(&Value::Null), problems);
    let mut subjects = Vec::new();
    match obj.get("subjects") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, s) in items.iter().enumerate() {
                let path = format!("subjects[{i}]");
                let (kind, sname, sns) = (
                    s.get("kind").and_then(Value::as_str),
                    s.get("name").and_then(Value::as_str),
                    s.get("namespace").map_or(Some(""), |v| {
                        if v.is_null() { Some("") } else { v.as_str() }
                    }),
                );
                let kind = match kind {
                    Some("User") => SubjectKind::User,
                    Some("Group") => SubjectKind::Group,
                    Some("ServiceAccount") => SubjectKind::ServiceAccount,
                    _ => {
                        problems.push((
                            format!("{path}.kind"),
                            "must be User, Group or ServiceAccount".into(),
                        ));
                        continue;
                    }
                };
                let (Some(sname), Some(sns)) = (sname.filter(|n| !n.is_empty()), sns) else {
                    problems.push((path, "needs a string name (and namespace, if any)".into()));
                    continue;
                };
                subjects.push(Subject {
                    kind,
                    name: sname.to_owned(),
                    namespace: sns.to_owned(),
                });
            }
        }
        Some(_) => problems.push(("subjects".into(), "must be a list".into())),
    }
    Binding {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        role_kind,
        role_name,
        subjects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::*;

    fn check(a: &Authorizer, pass: &[Attributes], fail: &[Attributes]) {
        for p in pass {
            assert_eq!(a.authorize(p), Decision::Allow, "should pass: {p:?}");
            assert!(a.review(p).allowed, "review should pass: {p:?}");
        }
        for f in fail {
            assert!(!a.authorize(f).is_allowed(), "should fail: {f:?}");
            assert!(!a.review(f).allowed, "review should fail: {f:?}");
        }
    }

    /// The RoleBinding upstream's `TestAuthorizer` cases share.
    fn admin_binding() -> Value {
        binding(
            "ns1",
            "admin",
            "ClusterRole",
            "admin",
            &["User:admin", "Group:admins"],
        )
    }

    // rbac_test.go `TestAuthorizer`, case by case.
    #[test]
    fn authorizer_role_binding_to_cluster_role() {
        let a = authorizer(&[
            cluster_role("admin", &[rule("*", "*", "*", "")]),
            admin_binding(),
        ]);
        check(
            &a,
            &[
                attrs("admin", "", "get", "Pods", "", "ns1", ""),
                attrs("admin", "", "watch", "Pods", "", "ns1", ""),
                attrs("admin", "group1", "watch", "Foobar", "", "ns1", ""),
                attrs("joe", "admins", "watch", "Foobar", "", "ns1", ""),
                attrs("joe", "group1,admins", "watch", "Foobar", "", "ns1", ""),
            ],
            &[
                attrs("admin", "", "GET", "Pods", "", "ns2", ""),
                attrs("admin", "", "GET", "Nodes", "", "", ""),
                attrs("admin", "admins", "GET", "Pods", "", "ns2", ""),
                attrs("admin", "admins", "GET", "Nodes", "", "", ""),
            ],
        );
    }

    #[test]
    fn authorizer_non_resource_urls() {
        let a = authorizer(&[
            cluster_role("non-resource-url-getter", &[rule("get", "", "", "/apis")]),
            cluster_role("non-resource-url", &[rule("*", "", "", "/apis")]),
            cluster_role("non-resource-url-prefix", &[rule("get", "", "", "/apis/*")]),
            cluster_binding(
                "non-resource-url-getter",
                "non-resource-url-getter",
                &["User:foo", "Group:bar"],
            ),
            cluster_binding(
                "non-resource-url",
                "non-resource-url",
                &["User:admin", "Group:admin"],
            ),
            cluster_binding(
                "non-resource-url-prefix",
                "non-resource-url-prefix",
                &["User:prefixed", "Group:prefixed"],
            ),
        ]);
        check(
            &a,
            &[
                url("foo", "", "get", "/apis"),
                url("", "bar", "get", "/apis"),
                url("admin", "", "get", "/apis"),
                url("", "admin", "get", "/apis"),
                url("admin", "", "watch", "/apis"),
                url("", "admin", "watch", "/apis"),
                url("prefixed", "", "get", "/apis/v1"),
                url("", "prefixed", "get", "/apis/v1"),
                url("prefixed", "", "get", "/apis/v1/foobar"),
                url("", "prefixed", "get", "/apis/v1/foorbar"),
            ],
            &[
                url("foo", "", "watch", "/apis"),
                url("", "bar", "watch", "/apis"),
                url("foo", "", "get", "/api/v1"),
                url("", "bar", "get", "/api/v1"),
                url("admin", "", "get", "/api/v1"),
                url("", "admin", "get", "/api/v1"),
                url("prefixed", "", "get", "/api/v1"),
                url("", "prefixed", "get", "/api/v1"),
            ],
        );
    }

    #[test]
    fn authorizer_subresource_resolution() {
        let a = authorizer(&[
            cluster_role("admin", &[rule("*", "*", "pods", "")]),
            admin_binding(),
        ]);
        check(
            &a,
            &[attrs("admin", "", "get", "pods", "", "ns1", "")],
            &[attrs("admin", "", "get", "pods", "status", "ns1", "")],
        );
        let a = authorizer(&[
            cluster_role(
                "admin",
                &[
                    rule("*", "*", "pods/status", ""),
                    rule("*", "*", "*/scale", ""),
                ],
            ),
            admin_binding(),
        ]);
        check(
            &a,
            &[
                attrs("admin", "", "get", "pods", "status", "ns1", ""),
                attrs("admin", "", "get", "pods", "scale", "ns1", ""),
                attrs("admin", "", "get", "deployments", "scale", "ns1", ""),
                attrs("admin", "", "get", "anything", "scale", "ns1", ""),
            ],
            &[attrs("admin", "", "get", "pods", "", "ns1", "")],
        );
    }

    // rule_test.go `TestAppliesTo`, through the authorizer.
    #[test]
    fn applies_to() {
        let cases: &[(&[&str], UserInfo, &str, bool, &str)] = &[
            (
                &["User:alice"],
                user("alice", ""),
                "",
                true,
                "single subject that matches username",
            ),
            (
                &["User:bob", "User:alice"],
                user("alice", ""),
                "",
                true,
                "multiple subjects, one that matches username",
            ),
            (
                &["User:bob", "User:alice"],
                user("zimmer", ""),
                "",
                false,
                "multiple subjects, none that match username",
            ),
            (
                &["User:bob", "Group:foobar"],
                user("zimmer", "foobar"),
                "",
                true,
                "multiple subjects, one that match group",
            ),
            (
                &["User:bob", "Group:foobar"],
                user("zimmer", "foobar"),
                "namespace1",
                true,
                "one that match group, should ignore namespace",
            ),
            (
                &[
                    "User:bob",
                    "Group:foobar",
                    "ServiceAccount:kube-system:default",
                ],
                user("system:serviceaccount:kube-system:default", ""),
                "namespace1",
                true,
                "multiple subjects with a service account that matches",
            ),
            (
                &["User:*"],
                user("alice", ""),
                "",
                false,
                "wildcard user does not match",
            ),
            (
                &["Group:*"],
                user("alice", "alpha,beta"),
                "",
                false,
                "wildcard group does not match",
            ),
            (
                &["ServiceAccount:default:default"],
                user("system:serviceaccount:other:default", ""),
                "other",
                false,
                "service account of another namespace",
            ),
        ];
        for (subjects, u, ns, want, name) in cases {
            let a = authorizer(&[
                cluster_role("r", &[rule("get", "", "pods", "")]),
                cluster_binding("b", "r", subjects),
            ]);
            let mut at = attrs("", "", "get", "pods", "", ns, "");
            at.user = u.clone();
            assert_eq!(a.authorize(&at).is_allowed(), *want, "{name}");
        }
    }

    #[test]
    fn service_account_namespace_defaults_to_the_role_bindings() {
        let a = authorizer(&[
            role("ns1", "reader", &[rule("get", "", "pods", "")]),
            binding("ns1", "b", "Role", "reader", &["ServiceAccount::builder"]),
            // In a ClusterRoleBinding a namespace-less service account matches no one.
            cluster_role("all", &[rule("*", "*", "*", "")]),
            cluster_binding("c", "all", &["ServiceAccount::builder"]),
        ]);
        let sa = |ns: &str| {
            let mut at = attrs("", "", "get", "pods", "", ns, "");
            at.user = user(
                &UserInfo::service_account_name("ns1", "builder"),
                "system:serviceaccounts",
            );
            at
        };
        assert!(a.authorize(&sa("ns1")).is_allowed());
        assert!(!a.authorize(&sa("ns2")).is_allowed());
        assert!(!a.authorize(&sa("")).is_allowed());
    }

    #[test]
    fn masters_are_always_allowed() {
        let a = Authorizer::new();
        assert!(
            a.authorize(&attrs(
                "root",
                "system:masters",
                "delete",
                "nodes",
                "",
                "",
                ""
            ))
            .is_allowed()
        );
        assert!(
            a.authorize(&url("root", "x,system:masters", "get", "/anything"))
                .is_allowed()
        );
        assert_eq!(
            a.review(&url("root", "system:masters", "get", "/x")).reason,
            ""
        );
        assert!(
            !a.authorize(&attrs("root", "system:master", "get", "pods", "", "", ""))
                .is_allowed()
        );
    }

    #[test]
    fn missing_roles_are_the_deny_reason() {
        let a = authorizer(&[
            binding("ns1", "b1", "Role", "gone", &["User:alice"]),
            cluster_binding("c1", "also-gone", &["Group:devs"]),
            binding("ns2", "elsewhere", "Role", "never-seen", &["User:alice"]),
        ]);
        let d = a.authorize(&attrs("alice", "devs", "get", "pods", "", "ns1", ""));
        assert_eq!(
            d,
            Decision::Deny {
                reason: r#"RBAC: [clusterrole.rbac.authorization.k8s.io "also-gone" not found, role.rbac.authorization.k8s.io "gone" not found]"#.into()
            }
        );
        assert_eq!(
            a.authorize(&attrs("bob", "", "get", "pods", "", "ns1", "")),
            Decision::Deny {
                reason: String::new()
            }
        );
        let review = a.rules_for(&user("alice", ""), "ns1");
        assert_eq!(
            review.evaluation_error,
            r#"role.rbac.authorization.k8s.io "gone" not found"#
        );
    }

    #[test]
    fn review_names_the_allowing_binding() {
        let a = authorizer(&[
            cluster_role("view", &[rule("get", "", "pods", "")]),
            binding(
                "ns1",
                "viewers",
                "ClusterRole",
                "view",
                &["User:bob", "ServiceAccount::sa"],
            ),
            cluster_binding("everyone", "view", &["Group:devs"]),
        ]);
        assert_eq!(
            a.review(&attrs(
                "system:serviceaccount:ns1:sa",
                "",
                "get",
                "pods",
                "",
                "ns1",
                ""
            ))
            .reason,
            r#"RBAC: allowed by RoleBinding "viewers/ns1" of ClusterRole "view" to ServiceAccount "sa/ns1""#
        );
        assert_eq!(
            a.review(&attrs("bob", "devs", "get", "pods", "", "ns1", ""))
                .reason,
            r#"RBAC: allowed by ClusterRoleBinding "everyone" of ClusterRole "view" to Group "devs""#
        );
        assert_eq!(
            a.review(&attrs("bob", "", "get", "pods", "", "ns1", ""))
                .to_json(),
            json!({"allowed": true, "reason": r#"RBAC: allowed by RoleBinding "viewers/ns1" of ClusterRole "view" to User "bob""#})
        );
        assert_eq!(
            a.review(&attrs("eve", "", "get", "pods", "", "ns1", ""))
                .to_json(),
            json!({"allowed": false})
        );
    }

    #[test]
    fn updates_and_removals_revoke() {
        let mut a = authorizer(&[
            cluster_role("edit", &[rule("*", "", "configmaps", "")]),
            binding(
                "ns1",
                "b",
                "ClusterRole",
                "edit",
                &["User:alice", "Group:devs"],
            ),
        ]);
        let alice = attrs("alice", "", "create", "configmaps", "", "ns1", "");
        let dev = attrs("carol", "devs", "create", "configmaps", "", "ns1", "");
        assert!(a.authorize(&alice).is_allowed() && a.authorize(&dev).is_allowed());
        // alice is dropped from the subjects: the old index entry must go.
        a.apply(&binding("ns1", "b", "ClusterRole", "edit", &["Group:devs"]))
            .unwrap();
        assert!(!a.authorize(&alice).is_allowed());
        assert!(a.authorize(&dev).is_allowed());
        // A binding update that breaks the roleRef revokes instead of keeping the old grant.
        let mut broken = binding("ns1", "b", "ClusterRole", "edit", &["Group:devs"]);
        broken["roleRef"]["kind"] = json!("Rolez");
        assert!(matches!(a.apply(&broken), Err(Error::Malformed { .. })));
        assert!(!a.authorize(&dev).is_allowed());
        a.apply(&binding("ns1", "b", "ClusterRole", "edit", &["Group:devs"]))
            .unwrap();
        a.remove("ClusterRole", "", "edit");
        assert!(!a.authorize(&dev).is_allowed());
        a.apply(&cluster_role("edit", &[rule("*", "", "configmaps", "")]))
            .unwrap();
        assert!(a.authorize(&dev).is_allowed());
        a.remove("RoleBinding", "ns1", "b");
        assert!(!a.authorize(&dev).is_allowed());
        assert!(a.by_user.is_empty() && a.by_group.is_empty() && a.role_bindings.is_empty());
    }

    #[test]
    fn malformed_objects_never_widen() {
        let mut a = Authorizer::new();
        a.apply(&binding("ns1", "b", "ClusterRole", "r", &["User:alice"]))
            .unwrap();
        // Unparseable rules are dropped; the valid one still applies.
        let r = json!({"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": [
            {"verbs": "*", "apiGroups": ["*"], "resources": ["*"]},
            {"verbs": ["*"], "apiGroups": "*", "resources": ["*"]},
            "everything",
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
        ]});
        let err = a.apply(&r).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"ClusterRole "r": ignored invalid fields: rules[0].verbs: must be a list of strings; rules[1].apiGroups: must be a list of strings; rules[2]: must be an object"#
        );
        assert!(
            a.authorize(&attrs("alice", "", "get", "pods", "", "ns1", ""))
                .is_allowed()
        );
        assert!(
            !a.authorize(&attrs("alice", "", "delete", "pods", "", "ns1", ""))
                .is_allowed()
        );
        assert!(
            !a.authorize(&attrs("alice", "", "get", "secrets", "", "ns1", ""))
                .is_allowed()
        );
        // Subjects that do not parse match no one.
        let bad = json!({"kind": "ClusterRoleBinding", "metadata": {"name": "c"},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "user", "name": "mallory"}, {"kind": "User", "name": ["mallory"]}, {"kind": "Group"}, 3]});
        assert!(a.apply(&bad).is_err());
        assert!(
            !a.authorize(&attrs("mallory", "", "get", "pods", "", "", ""))
                .is_allowed()
        );
        assert!(
            !a.authorize(&attrs("", "", "get", "pods", "", "", ""))
                .is_allowed()
        );
        // A roleRef of another group grants nothing.
        let other = json!({"kind": "ClusterRoleBinding", "metadata": {"name": "d"},
            "roleRef": {"apiGroup": "example.com", "kind": "ClusterRole", "name": "r"},
            "subjects": [{"kind": "User", "name": "mallory"}]});
        assert!(a.apply(&other).is_err());
        assert!(
            !a.authorize(&attrs("mallory", "", "get", "pods", "", "", ""))
                .is_allowed()
        );
        // Objects without identity or of other kinds change nothing.
        assert_eq!(
            a.apply(&json!({"kind": "Role", "metadata": {"name": "x"}})),
            Err(Error::MissingIdentity {
                kind: "Role".into(),
                field: "metadata.namespace"
            })
        );
        assert_eq!(
            a.apply(&json!({"kind": "Pod"})),
            Err(Error::UnsupportedKind("Pod".into()))
        );
        assert!(a.apply(&json!(null)).is_err());
        assert!(
            a.apply(&json!({"kind": "ClusterRole", "metadata": "r"}))
                .is_err()
        );
    }

    #[test]
    fn cluster_role_binding_to_a_role_finds_nothing() {
        let mut crb = cluster_binding("c", "r", &["User:alice"]);
        crb["roleRef"]["kind"] = json!("Role");
        let a = authorizer(&[role("ns1", "r", &[rule("*", "*", "*", "")]), crb]);
        assert_eq!(
            a.authorize(&attrs("alice", "", "get", "pods", "", "ns1", "")),
            Decision::Deny {
                reason: r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.into()
            }
        );
    }

    #[test]
    fn rules_for_lists_cluster_then_namespace_rules() {
        let a = authorizer(&[
            cluster_role("discovery", &[rule("get", "", "", "/api,/api/*")]),
            cluster_binding("discovery", "discovery", &["Group:system:authenticated"]),
            role("ns1", "cm", &[rule("get,list", "", "configmaps", "")]),
            binding("ns1", "cm", "Role", "cm", &["User:alice"]),
            binding("ns2", "cm", "Role", "cm", &["User:alice"]),
        ]);
        let review = a.rules_for(&user("alice", "system:authenticated"), "ns1");
        assert_eq!(
            review.to_json(),
            json!({
                "resourceRules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}],
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}],
                "incomplete": false,
            })
        );
        // ns2's binding points at a Role that exists only in ns1.
        let review = a.rules_for(&user("alice", ""), "ns2");
        assert!(review.resource_rules.is_empty());
        assert_eq!(
            review.evaluation_error,
            r#"role.rbac.authorization.k8s.io "cm" not found"#
        );
    }

    #[test]
    fn bootstrap_policy_grants_what_upstream_grants() {
        let mut objs = crate::bootstrap_policy();
        for o in &objs {
            assert_eq!(
                o["metadata"]["labels"]["kubernetes.io/bootstrapping"], "rbac-defaults",
                "{o}"
            );
            assert!(crate::validate(o).is_empty(), "{o}");
        }
        objs.push(binding("team", "edit", "ClusterRole", "edit", &["User:ed"]));
        objs.push(binding("team", "view", "ClusterRole", "view", &["User:vi"]));
        objs.push(binding(
            "team",
            "admin",
            "ClusterRole",
            "admin",
            &["User:ad"],
        ));
        let a = authorizer(&objs);
        let auth = "system:authenticated";
        check(
            &a,
            &[
                url("anyone", auth, "get", "/apis/apps/v1"),
                url("anyone", auth, "get", "/version"),
                url(
                    "system:anonymous",
                    "system:unauthenticated",
                    "get",
                    "/healthz",
                ),
                attrs(
                    "anyone",
                    auth,
                    "create",
                    "selfsubjectaccessreviews",
                    "",
                    "",
                    "authorization.k8s.io",
                ),
                attrs(
                    "anyone",
                    auth,
                    "create",
                    "selfsubjectrulesreviews",
                    "",
                    "",
                    "authorization.k8s.io",
                ),
                attrs("vi", auth, "list", "pods", "", "team", ""),
                attrs("vi", auth, "get", "deployments", "scale", "team", "apps"),
                attrs("ed", auth, "create", "deployments", "", "team", "apps"),
                attrs("ed", auth, "get", "secrets", "", "team", ""),
                attrs("ed", auth, "list", "pods", "", "team", ""),
                attrs(
                    "ad",
                    auth,
                    "create",
                    "rolebindings",
                    "",
                    "team",
                    "rbac.authorization.k8s.io",
                ),
                attrs("ad", auth, "delete", "pods", "", "team", ""),
            ],
            &[
                url("system:anonymous", "system:unauthenticated", "get", "/apis"),
                attrs("anyone", auth, "list", "pods", "", "team", ""),
                attrs("vi", auth, "get", "secrets", "", "team", ""),
                attrs("vi", auth, "list", "pods", "", "", ""),
                attrs("vi", auth, "list", "pods", "", "other", ""),
                attrs(
                    "ed",
                    auth,
                    "create",
                    "rolebindings",
                    "",
                    "team",
                    "rbac.authorization.k8s.io",
                ),
                attrs("ed", auth, "update", "resourcequotas", "", "team", ""),
                attrs("ad", auth, "list", "nodes", "", "", ""),
            ],
        );
    }

    /// The upstream rules users lean on most (`system:aggregate-to-*` in
    /// `bootstrappolicy/policy.go`), through the authorizer rather than by shape.
    #[test]
    fn bootstrap_policy_pins_upstream_rules() {
        let mut objs = crate::bootstrap_policy();
        for (role, user) in [
            ("edit", "User:ed"),
            ("view", "User:vi"),
            ("admin", "User:ad"),
        ] {
            objs.push(binding("team", role, "ClusterRole", role, &[user]));
        }
        let a = authorizer(&objs);
        let auth = "system:authenticated";
        let rbac = "rbac.authorization.k8s.io";
        let coord = "coordination.k8s.io";
        let at = |u: &str, verb: &str, res: &str, sub: &str, group: &str| {
            attrs(u, auth, verb, res, sub, "team", group)
        };
        check(
            &a,
            &[
                attrs(
                    "anyone",
                    auth,
                    "create",
                    "selfsubjectreviews",
                    "",
                    "",
                    "authentication.k8s.io",
                ),
                at("vi", "get", "pods", "log", ""),
                at("vi", "list", "endpointslices", "", "discovery.k8s.io"),
                at("ed", "create", "pods", "", ""),
                at("ed", "create", "pods", "exec", ""),
                at("ed", "create", "pods", "eviction", ""),
                at("ed", "create", "deployments", "", "apps"),
                at("ed", "patch", "deployments", "scale", "apps"),
                at("ed", "create", "events", "", ""),
                at("ed", "create", "serviceaccounts", "token", ""),
                at("ed", "impersonate", "serviceaccounts", "", ""),
                at("ed", "update", "leases", "", coord),
                at("ed", "watch", "leases", "", coord),
                at("ad", "create", "rolebindings", "", rbac),
                at("ad", "delete", "roles", "", rbac),
                at(
                    "ad",
                    "create",
                    "localsubjectaccessreviews",
                    "",
                    "authorization.k8s.io",
                ),
                at("ad", "delete", "leases", "", coord),
            ],
            &[
                at("vi", "get", "secrets", "", ""),
                at("vi", "get", "pods", "exec", ""),
                at("vi", "get", "leases", "", coord),
                at("vi", "create", "pods", "", ""),
                at("ed", "get", "roles", "", rbac),
                at("ed", "create", "rolebindings", "", rbac),
                at("ed", "update", "roles", "", rbac),
                // Dropped from edit upstream in 1.22 (CVE-2021-25740).
                at("ed", "create", "endpoints", "", ""),
                at("ed", "update", "resourcequotas", "", ""),
                at("ed", "update", "pods", "status", ""),
                at("ad", "update", "resourcequotas", "", ""),
                at("ad", "create", "clusterroles", "", rbac),
                attrs("ad", auth, "create", "rolebindings", "", "other", rbac),
            ],
        );
    }
}
