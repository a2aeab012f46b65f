//! The tree under an object (its dependents, transitively) or above it (`--owners`), as
//! kubectl-tree shows it (github.com/ahmetb/kubectl-tree: NAMESPACE, NAME drawn as a tree,
//! READY, REASON, AGE), with what the garbage collector reads in each object and reference.

use std::collections::HashSet;
use std::fmt::Write as _;

use kgc_meta::OwnerReference;
use kgc_meta::duration::human_duration;
use kgc_meta::time::Timestamp;
use serde::Serialize;

use crate::Graph;
use crate::graph::{Node, OwnerState, Ready, Unlisted};

/// Which way the tree grows from its root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Direction {
    /// The objects naming the root as owner, and theirs, and so on.
    Dependents,
    /// The root's owners, and theirs.
    Owners,
}

/// The answer of `kgc tree`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tree {
    pub direction: Direction,
    pub root: Branch,
    /// Kinds that could not be listed: objects of theirs are missing from the tree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unlisted: Vec<Unlisted>,
}

/// One object in the tree and the branches under it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    #[serde(flatten)]
    pub object: Object,
    /// The owner reference joining this object to its parent in the tree (the dependent's
    /// reference, whichever way the tree grows); none at the root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<Reference>,
    /// Already on the path from the root: an ownership cycle, not followed again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cycle: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<Branch>,
}

/// What the tree shows of an object. An owner that does not exist is shown as its reference
/// names it (no timestamps).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Object {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
    pub uid: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<Ready>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
}

impl Object {
    fn of(n: &Node) -> Self {
        Self {
            api_version: n.api_version.clone(),
            kind: n.kind.clone(),
            namespace: n.namespace.clone(),
            name: n.name.clone(),
            uid: n.uid.clone(),
            ready: n.ready.clone(),
            creation_timestamp: n.creation_timestamp.clone(),
            deletion_timestamp: n.deletion_timestamp.clone(),
            finalizers: n.finalizers.clone(),
        }
    }

    /// An owner known only by the reference naming it.
    fn named(r: &OwnerReference, namespace: &str) -> Self {
        Self {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: namespace.to_owned(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            ready: None,
            creation_timestamp: None,
            deletion_timestamp: None,
            finalizers: Vec::new(),
        }
    }
}

/// An owner reference and what the collector makes of it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    pub controller: bool,
    pub block_owner_deletion: bool,
    #[serde(flatten)]
    pub state: OwnerState,
}

/// The tree of `root`'s dependents (`Direction::Dependents`) or owners.
pub fn build(graph: &Graph, root: &Node, direction: Direction) -> Tree {
    let mut path = HashSet::new();
    Tree {
        direction,
        root: branch(graph, root, None, direction, &mut path),
        unlisted: graph.unlisted().to_vec(),
    }
}

fn branch(
    graph: &Graph,
    node: &Node,
    reference: Option<Reference>,
    direction: Direction,
    path: &mut HashSet<String>,
) -> Branch {
    let mut b = Branch {
        object: Object::of(node),
        reference,
        cycle: false,
        children: Vec::new(),
    };
    if !path.insert(node.uid.clone()) {
        b.cycle = true;
        return b;
    }
    match direction {
        Direction::Dependents => {
            for d in graph.dependents(&node.uid) {
                let edge = graph
                    .owners(d)
                    .into_iter()
                    .find(|o| o.reference.uid == node.uid)
                    .map(|o| reference_of(o.reference, o.state));
                b.children.push(branch(graph, d, edge, direction, path));
            }
        }
        Direction::Owners => {
            for o in graph.owners(node) {
                let edge = Some(reference_of(o.reference, o.state.clone()));
                b.children.push(match o.node {
                    Some(owner) => branch(graph, owner, edge, direction, path),
                    None => {
                        let namespaced = !matches!(o.state, OwnerState::UnservedKind)
                            && graph.is_namespaced(&crate::graph::GroupKind::of(
                                &o.reference.api_version,
                                &o.reference.kind,
                            )) == Some(true);
                        let ns = if namespaced {
                            node.namespace.as_str()
                        } else {
                            ""
                        };
                        Branch {
                            object: Object::named(o.reference, ns),
                            reference: edge,
                            cycle: false,
                            children: Vec::new(),
                        }
                    }
                });
            }
        }
    }
    path.remove(&node.uid);
    b
}

fn reference_of(r: &OwnerReference, state: OwnerState) -> Reference {
    Reference {
        controller: r.controller == Some(true),
        block_owner_deletion: r.blocks(),
        state,
    }
}

impl Tree {
    /// The uids of every object in the tree, root first (those whose `Ready` condition is
    /// worth reading).
    pub fn uids(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.root
            .walk(&mut |b, _| out.push(b.object.uid.clone()), "", true, true);
        out
    }

    /// kubectl-tree's table, and the collector's columns where any row has something to say.
    pub fn table(&self, now: Timestamp) -> String {
        let mut rows: Vec<[String; 8]> = vec![
            [
                "NAMESPACE",
                "NAME",
                "READY",
                "REASON",
                "AGE",
                "DELETING",
                "FINALIZERS",
                "REFERENCE",
            ]
            .map(str::to_owned),
        ];
        self.root.walk(
            &mut |b, prefix| rows.push(row(b, prefix, now)),
            "",
            true,
            true,
        );
        // The GC columns (5..) only when some row fills them.
        let shown: Vec<usize> = (0..8)
            .filter(|&c| c < 5 || rows[1..].iter().any(|r| !r[c].is_empty()))
            .collect();
        let widths: Vec<usize> = shown
            .iter()
            .map(|&c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for r in &rows {
            let mut line = String::new();
            for (i, &c) in shown.iter().enumerate() {
                if i + 1 == shown.len() {
                    line.push_str(&r[c]);
                } else {
                    let _ = write!(line, "{:w$}  ", r[c], w = widths[i]);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for u in &self.unlisted {
            let _ = writeln!(
                out,
                "\nwarning: could not list {}{} ({}): objects of that kind are missing",
                u.group_kind,
                u.namespace
                    .as_deref()
                    .map(|n| format!(" in {n}"))
                    .unwrap_or_default(),
                u.reason
            );
        }
        out
    }
}

impl Branch {
    /// Visits the branch depth-first with the tree drawing of each row's NAME.
    fn walk(&self, visit: &mut impl FnMut(&Branch, &str), indent: &str, last: bool, root: bool) {
        let prefix = if root {
            String::new()
        } else {
            format!("{indent}{}", if last { "└─" } else { "├─" })
        };
        visit(self, &prefix);
        let child_indent = if root {
            String::new()
        } else {
            format!("{indent}{}", if last { "  " } else { "│ " })
        };
        for (i, c) in self.children.iter().enumerate() {
            c.walk(visit, &child_indent, i + 1 == self.children.len(), false);
        }
    }
}

fn row(b: &Branch, prefix: &str, now: Timestamp) -> [String; 8] {
    let o = &b.object;
    let age = |t: &Option<String>| {
        t.as_deref()
            .and_then(|t| t.parse::<Timestamp>().ok())
            .map(|t| now.duration_since(t))
            .map(|d| match d.is_negative() {
                // A graceful deletion's timestamp is when its grace period ends.
                true => format!("in {}", human_duration(-d)),
                false => human_duration(d),
            })
            .unwrap_or_default()
    };
    let (ready, reason) = o
        .ready
        .as_ref()
        .map(|r| (r.status.clone(), r.reason.clone()))
        // kubectl-tree's mark for an object without a `Ready` condition.
        .unwrap_or_else(|| ("-".to_owned(), String::new()));
    [
        o.namespace.clone(),
        format!(
            "{prefix}{}/{}{}",
            o.kind,
            o.name,
            if b.cycle { " (cycle)" } else { "" }
        ),
        ready,
        reason,
        age(&o.creation_timestamp),
        age(&o.deletion_timestamp),
        o.finalizers.join(","),
        b.reference.as_ref().map(describe).unwrap_or_default(),
    ]
}

/// A reference in a few words: how it binds and, when it does not, why.
fn describe(r: &Reference) -> String {
    let mut words = Vec::new();
    if r.controller {
        words.push("controller".to_owned());
    }
    if r.block_owner_deletion {
        words.push("blocks".to_owned());
    }
    match &r.state {
        OwnerState::Present => {}
        OwnerState::Absent => words.push("owner absent".to_owned()),
        OwnerState::OtherNamespace { namespace } => {
            words.push(format!("INVALID: owner is in namespace {namespace}"))
        }
        OwnerState::NamespacedOwnerOfClusterScoped => {
            words.push("INVALID: namespaced owner of a cluster-scoped object".to_owned())
        }
        OwnerState::Unknown { .. } => words.push("owner unknown (not listed)".to_owned()),
        OwnerState::UnservedKind => words.push("owner kind not served".to_owned()),
    }
    words.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::tests::{graph, object};

    #[test]
    fn dependents_and_owners_with_gc_columns() {
        let mut held = object("v1", "Pod", "a", "p2", &[("ReplicaSet", "rs", "uid-rs")]);
        held["metadata"]["deletionTimestamp"] = "2026-01-01T00:30:00Z".into();
        held["metadata"]["finalizers"] = serde_json::json!(["example.com/hold"]);
        let mut graceful = object("v1", "Pod", "a", "p3", &[("ReplicaSet", "rs", "uid-rs")]);
        graceful["metadata"]["deletionTimestamp"] = "2026-01-01T01:00:30Z".into();
        let g = graph(&[
            object("apps/v1", "Deployment", "a", "web", &[]),
            object(
                "apps/v1",
                "ReplicaSet",
                "a",
                "rs",
                &[("Deployment", "web", "uid-web")],
            ),
            object("v1", "Pod", "a", "p1", &[("ReplicaSet", "rs", "uid-rs")]),
            held,
            graceful,
            object(
                "apps/v1",
                "ReplicaSet",
                "b",
                "stray",
                &[("Deployment", "web", "uid-web")],
            ),
        ]);
        let now: Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let t = build(&g, g.node("uid-web").unwrap(), Direction::Dependents);
        assert_eq!(
            t.table(now),
            "\
NAMESPACE  NAME                READY  REASON  AGE  DELETING  FINALIZERS        REFERENCE
a          Deployment/web      -              60m
a          ├─ReplicaSet/rs     -              60m                              controller, blocks
a          │ ├─Pod/p1          -              60m                              controller, blocks
a          │ ├─Pod/p2          -              60m  30m       example.com/hold  controller, blocks
a          │ └─Pod/p3          -              60m  in 30s                      controller, blocks
b          └─ReplicaSet/stray  -              60m                              controller, blocks, INVALID: owner is in namespace a
"
        );
        let up = build(&g, g.node("uid-p1").unwrap(), Direction::Owners);
        let names: Vec<_> = up.uids();
        assert_eq!(names, ["uid-p1", "uid-rs", "uid-web"]);
    }

    #[test]
    fn cycles_stop() {
        let g = graph(&[
            object("v1", "ConfigMap", "a", "x", &[("ConfigMap", "y", "uid-y")]),
            object("v1", "ConfigMap", "a", "y", &[("ConfigMap", "x", "uid-x")]),
        ]);
        let t = build(&g, g.node("uid-x").unwrap(), Direction::Dependents);
        assert_eq!(t.uids(), ["uid-x", "uid-y", "uid-x"]);
        assert!(t.root.children[0].children[0].cycle);
    }
}
