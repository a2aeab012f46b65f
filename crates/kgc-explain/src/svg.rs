//! `kgc tree -o svg`: the tree as a picture, laid out here in pure Rust (no graphviz): a
//! layered drawing after Sugiyama, cut down to what ownership needs. Each object is drawn once
//! (an object with two owners in the tree is one box with two arrows in), owners above their
//! dependents; layers are ordered by the barycentre of the boxes above, which untangles the
//! shapes ownership makes (fans and diamonds) without a crossing-minimisation search. Output is
//! a deterministic function of the tree.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::graph::OwnerState;
use crate::tree::{Branch, Direction, Object, Reference, Tree};

/// Pixels of one character of the 12px monospace text.
const CHAR: f64 = 7.2;
const BOX_HEIGHT: f64 = 38.0;
const PAD: f64 = 8.0;
const GAP_X: f64 = 24.0;
const GAP_Y: f64 = 56.0;
const MARGIN: f64 = 16.0;

struct Box_<'t> {
    object: &'t Object,
    /// Whether it exists (an absent owner is drawn from its reference, dashed).
    exists: bool,
    layer: usize,
    width: f64,
    x: f64,
}

/// An arrow from owner to dependent.
struct Edge<'t> {
    owner: usize,
    dependent: usize,
    reference: &'t Reference,
}

/// The picture of `tree`.
pub fn render(tree: &Tree) -> String {
    let mut boxes: Vec<Box_> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut edges: Vec<Edge> = Vec::new();
    collect(
        &tree.root,
        None,
        0,
        tree.direction,
        &mut boxes,
        &mut index,
        &mut edges,
    );
    if tree.direction == Direction::Owners {
        // Owners on top: the deepest owner is the first layer.
        let deepest = boxes.iter().map(|b| b.layer).max().unwrap_or(0);
        for b in &mut boxes {
            b.layer = deepest - b.layer;
        }
    }
    let layers = order_layers(&boxes, &edges);
    place(&mut boxes, &layers);
    draw(&boxes, &edges, layers.len())
}

/// Walks the tree, one box per uid at the smallest depth it is met at.
fn collect<'t>(
    b: &'t Branch,
    parent: Option<(usize, &'t Reference)>,
    depth: usize,
    direction: Direction,
    boxes: &mut Vec<Box_<'t>>,
    index: &mut HashMap<&'t str, usize>,
    edges: &mut Vec<Edge<'t>>,
) {
    let i = match index.get(b.object.uid.as_str()) {
        Some(&i) => {
            boxes[i].layer = boxes[i].layer.min(depth);
            i
        }
        None => {
            let label = label(&b.object);
            boxes.push(Box_ {
                object: &b.object,
                exists: b.object.creation_timestamp.is_some(),
                layer: depth,
                width: label.0.chars().count().max(label.1.chars().count()) as f64 * CHAR
                    + 2.0 * PAD,
                x: 0.0,
            });
            index.insert(&b.object.uid, boxes.len() - 1);
            boxes.len() - 1
        }
    };
    if let Some((p, reference)) = parent {
        let (owner, dependent) = match direction {
            Direction::Dependents => (p, i),
            Direction::Owners => (i, p),
        };
        if !edges
            .iter()
            .any(|e| e.owner == owner && e.dependent == dependent)
        {
            edges.push(Edge {
                owner,
                dependent,
                reference,
            });
        }
    }
    if b.cycle {
        return;
    }
    for c in &b.children {
        if let Some(r) = &c.reference {
            collect(c, Some((i, r)), depth + 1, direction, boxes, index, edges);
        }
    }
}

/// The two lines of a box: `Kind/name`, then the namespace and what holds the object.
fn label(o: &Object) -> (String, String) {
    let first = format!("{}/{}", o.kind, o.name);
    let mut second = Vec::new();
    if !o.namespace.is_empty() {
        second.push(o.namespace.clone());
    }
    if o.deletion_timestamp.is_some() {
        second.push("deleting".to_owned());
    }
    second.extend(o.finalizers.iter().cloned());
    (first, second.join(" · "))
}

/// Boxes by layer, each layer ordered by the mean position of its owners in the layer above
/// (ties keep the tree's order).
fn order_layers(boxes: &[Box_], edges: &[Edge]) -> Vec<Vec<usize>> {
    let count = boxes.iter().map(|b| b.layer + 1).max().unwrap_or(0);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, b) in boxes.iter().enumerate() {
        layers[b.layer].push(i);
    }
    let mut position: HashMap<usize, usize> = HashMap::new();
    for (l, layer) in layers.iter_mut().enumerate() {
        if l > 0 {
            let key = |i: usize| {
                let above: Vec<f64> = edges
                    .iter()
                    .filter_map(|e| match (e.owner, e.dependent) {
                        (o, d) if d == i && boxes[o].layer < l => position.get(&o),
                        (o, d) if o == i && boxes[d].layer < l => position.get(&d),
                        _ => None,
                    })
                    .map(|&p| p as f64)
                    .collect();
                if above.is_empty() {
                    f64::MAX
                } else {
                    above.iter().sum::<f64>() / above.len() as f64
                }
            };
            let mut keyed: Vec<(f64, usize)> = layer.iter().map(|&i| (key(i), i)).collect();
            keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            *layer = keyed.into_iter().map(|(_, i)| i).collect();
        }
        for (p, &i) in layer.iter().enumerate() {
            position.insert(i, p);
        }
    }
    layers
}

/// Left to right within each layer, every layer centred on the widest.
fn place(boxes: &mut [Box_], layers: &[Vec<usize>]) {
    let width = |l: &Vec<usize>| {
        l.iter().map(|&i| boxes[i].width).sum::<f64>() + GAP_X * l.len().saturating_sub(1) as f64
    };
    let widths: Vec<f64> = layers.iter().map(width).collect();
    let widest = widths.iter().copied().fold(0.0, f64::max);
    for (l, w) in layers.iter().zip(widths) {
        let mut x = MARGIN + (widest - w) / 2.0;
        for &i in l {
            boxes[i].x = x;
            x += boxes[i].width + GAP_X;
        }
    }
}

fn y_of(layer: usize) -> f64 {
    MARGIN + layer as f64 * (BOX_HEIGHT + GAP_Y)
}

fn draw(boxes: &[Box_], edges: &[Edge], layers: usize) -> String {
    let width = boxes.iter().map(|b| b.x + b.width).fold(0.0, f64::max) + MARGIN;
    let height = y_of(layers) - GAP_Y + MARGIN;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="monospace" font-size="12">"#
    );
    s.push_str(concat!(
        r#"<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse">"#,
        r#"<path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>"#,
        "\n",
        "<style>.box{fill:#eef3fb;stroke:#34568b}.deleting{fill:#fde8e8;stroke:#c62828;stroke-width:2}",
        ".absent{fill:#fff;stroke:#888;stroke-dasharray:4 3}.sub{fill:#555;font-size:10px}",
        ".edge{stroke:#555;fill:none}.blocks{stroke-width:2}.blocking{stroke:#c62828;stroke-width:3}",
        ".invalid{stroke:#e65100;stroke-dasharray:6 3}.missing{stroke:#888;stroke-dasharray:2 3}</style>\n",
    ));
    for e in edges {
        let (o, d) = (&boxes[e.owner], &boxes[e.dependent]);
        let (x1, y1) = (o.x + o.width / 2.0, y_of(o.layer) + BOX_HEIGHT);
        let (x2, y2) = (d.x + d.width / 2.0, y_of(d.layer));
        let _ = writeln!(
            s,
            r#"<line class="{}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" marker-end="url(#arrow)"><title>{}</title></line>"#,
            edge_class(e, o),
            escape(&edge_title(e.reference)),
        );
    }
    for b in boxes {
        let (first, second) = label(b.object);
        let y = y_of(b.layer);
        let class = if !b.exists {
            "box absent"
        } else if b.object.deletion_timestamp.is_some() {
            "box deleting"
        } else {
            "box"
        };
        let _ = writeln!(
            s,
            r#"<g><title>{}</title><rect class="{class}" x="{:.1}" y="{y:.1}" width="{:.1}" height="{BOX_HEIGHT}" rx="4"/><text x="{:.1}" y="{:.1}">{}</text><text class="sub" x="{:.1}" y="{:.1}">{}</text></g>"#,
            escape(&b.object.uid),
            b.x,
            b.width,
            b.x + PAD,
            y + 16.0,
            escape(&first),
            b.x + PAD,
            y + 30.0,
            escape(&second),
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Invalid and missing references stand out; a blocking reference to an owner being deleted
/// (a foreground deletion waits on it) most of all.
fn edge_class(e: &Edge, owner: &Box_) -> &'static str {
    match e.reference.state {
        OwnerState::OtherNamespace { .. } | OwnerState::NamespacedOwnerOfClusterScoped => {
            "edge invalid"
        }
        OwnerState::Absent | OwnerState::Unknown { .. } | OwnerState::UnservedKind => {
            "edge missing"
        }
        OwnerState::Present if e.reference.block_owner_deletion => {
            if owner.object.deletion_timestamp.is_some() {
                "edge blocking"
            } else {
                "edge blocks"
            }
        }
        OwnerState::Present => "edge",
    }
}

fn edge_title(r: &Reference) -> String {
    let mut words = vec![match &r.state {
        OwnerState::Present => "owner present".to_owned(),
        OwnerState::Absent => "owner absent".to_owned(),
        OwnerState::OtherNamespace { namespace } => {
            format!("invalid: the owner is in namespace {namespace}")
        }
        OwnerState::NamespacedOwnerOfClusterScoped => {
            "invalid: namespaced owner of a cluster-scoped object".to_owned()
        }
        OwnerState::Unknown { reason } => format!("owner unknown: {reason}"),
        OwnerState::UnservedKind => "owner kind not served".to_owned(),
    }];
    if r.controller {
        words.push("controller".to_owned());
    }
    if r.block_owner_deletion {
        words.push("blockOwnerDeletion".to_owned());
    }
    words.join(", ")
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{graph, object};
    use crate::tree::build;

    /// The picture of a small graph against `testdata/tree.svg` (`KGC_BLESS=1` rewrites it after
    /// a deliberate change; review the picture before committing it).
    #[test]
    fn snapshot() {
        let mut deleting = object(
            "apps/v1",
            "ReplicaSet",
            "a",
            "rs",
            &[("Deployment", "web", "uid-web")],
        );
        deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:30:00Z".into();
        deleting["metadata"]["finalizers"] = serde_json::json!(["foregroundDeletion"]);
        let g = graph(&[
            object("apps/v1", "Deployment", "a", "web", &[]),
            deleting,
            object("v1", "Pod", "a", "p1", &[("ReplicaSet", "rs", "uid-rs")]),
            object("v1", "Pod", "a", "p2", &[("ReplicaSet", "rs", "uid-rs")]),
            object(
                "v1",
                "ConfigMap",
                "a",
                "shared",
                &[("Pod", "p1", "uid-p1"), ("Pod", "p2", "uid-p2")],
            ),
            object(
                "apps/v1",
                "ReplicaSet",
                "b",
                "stray",
                &[("Deployment", "web", "uid-web")],
            ),
        ]);
        let svg = render(&build(
            &g,
            g.node("uid-web").unwrap(),
            Direction::Dependents,
        ));
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/tree.svg");
        if std::env::var_os("KGC_BLESS").is_some() {
            std::fs::write(path, &svg).unwrap();
        }
        assert_eq!(svg, std::fs::read_to_string(path).unwrap());
        // The shared ConfigMap is one box with two arrows in.
        assert_eq!(svg.matches(">ConfigMap/shared<").count(), 1);
        assert_eq!(svg.matches("<line ").count(), 6);
    }
}
