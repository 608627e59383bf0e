//! `csis graph`: the object graph a plan works on, as Graphviz DOT or a
//! Mermaid flowchart (which GitHub renders in a README): OS builders and
//! the image chains on them, instances with their image and storages,
//! storages and images with their groups; with `lineage`, the recorded
//! builds with their parents and the pins that hold images and instances.

use std::collections::{BTreeMap, BTreeSet};

use csis_model::models::Item;
use csis_model::{ItemKind, Vct};

use crate::db::{Db, Tree};
use crate::load::builders::builders;
use crate::load::items::{ItemId, item_index};
use crate::load::items_model::structured_item;
use crate::state::lineage::{lineage, pins};

/// The nodes (id, label, shape) and edges (from, to, label), each sorted,
/// so the same tree always draws the same text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Graph {
    nodes: BTreeSet<(String, String, Shape)>,
    edges: BTreeSet<(String, String, String)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Shape {
    OsBuilder,
    Image,
    Instance,
    Storage,
    Group,
    Build,
}

pub fn graph(db: &dyn Db, tree: Tree, with_lineage: bool) -> Graph {
    let mut g = Graph::default();
    for os in builders(db, tree).names(Vct::OsBuilderModel) {
        g.node(
            format!("os:{os}"),
            format!("{os} (OS builder)"),
            Shape::OsBuilder,
        );
    }
    let index = item_index(db, tree);
    let item = |kind: ItemKind, name: &str| structured_item(db, ItemId::new(db, tree, kind, name));
    let image_node = |name: &str| {
        if index.contains(ItemKind::IMAGES, name) {
            format!("image:{name}")
        } else {
            format!("os:{name}")
        }
    };
    for name in index.names(ItemKind::GROUPS) {
        g.node(
            format!("group:{name}"),
            format!("{name} (group)"),
            Shape::Group,
        );
    }
    for name in index.names(ItemKind::IMAGES) {
        g.node(format!("image:{name}"), name.to_string(), Shape::Image);
        if let Some(Item::Image(img)) = item(ItemKind::IMAGES, name).item.as_deref() {
            if let Some(parent) = &img.source_image {
                g.edge(format!("image:{name}"), image_node(parent), "source");
            }
            if let Some(group) = &img.group {
                g.edge(format!("image:{name}"), format!("group:{group}"), "group");
            }
        }
    }
    for name in index.names(ItemKind::STORAGES) {
        g.node(
            format!("storage:{name}"),
            format!("{name} (storage)"),
            Shape::Storage,
        );
        if let Some(Item::Storage(st)) = item(ItemKind::STORAGES, name).item.as_deref() {
            for group in &st.groups {
                g.edge(format!("storage:{name}"), format!("group:{group}"), "group");
            }
        }
    }
    for name in index.names(ItemKind::INSTANCES) {
        g.node(
            format!("instance:{name}"),
            format!("{name} (instance)"),
            Shape::Instance,
        );
        let si = item(ItemKind::INSTANCES, name);
        if let Some(Item::Instance(inst)) = si.item.as_deref()
            && let Some(image) = &inst.image
        {
            g.edge(format!("instance:{name}"), image_node(image), "image");
        }
        for m in &si.storages {
            g.edge(
                format!("instance:{name}"),
                format!("storage:{}", m.name),
                "attach",
            );
        }
    }
    if with_lineage {
        for b in &lineage(db, tree).value.builds {
            g.node(
                format!("build:{}", b.build_id),
                b.build_id.clone(),
                Shape::Build,
            );
            g.edge(format!("build:{}", b.build_id), image_node(&b.series), "of");
            if b.parent != "vendor" && !b.parent.is_empty() {
                g.edge(
                    format!("build:{}", b.build_id),
                    format!("build:{}", b.parent),
                    "parent",
                );
            }
        }
        let pins = &pins(db, tree).value;
        for (key, build) in &pins.images {
            let image = key.split_once('@').map_or(key.as_str(), |(i, _)| i);
            g.edge(
                image_node(image),
                format!("build:{build}"),
                &format!("pin {key}"),
            );
        }
        for (instance, build) in &pins.instances {
            g.edge(
                format!("instance:{instance}"),
                format!("build:{build}"),
                "pin",
            );
        }
    }
    g
}

impl Graph {
    fn node(&mut self, id: String, label: String, shape: Shape) {
        self.nodes.insert((id, label, shape));
    }

    fn edge(&mut self, from: String, to: String, label: &str) {
        self.edges.insert((from, to, label.to_string()));
    }

    /// Graphviz DOT: `dot -Tsvg`.
    pub fn dot(&self) -> String {
        let mut out = String::from("digraph csis {\n  rankdir=LR;\n");
        for (id, label, shape) in &self.nodes {
            let style = match shape {
                Shape::OsBuilder => "shape=box, style=bold",
                Shape::Image => "shape=box, style=rounded",
                Shape::Instance => "shape=ellipse",
                Shape::Storage => "shape=cylinder",
                Shape::Group => "shape=hexagon",
                Shape::Build => "shape=note",
            };
            out.push_str(&format!(
                "  {} [label={}, {style}];\n",
                quoted(id),
                quoted(label)
            ));
        }
        for (from, to, label) in &self.edges {
            out.push_str(&format!(
                "  {} -> {} [label={}];\n",
                quoted(from),
                quoted(to),
                quoted(label)
            ));
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart; node ids are positions in the sorted node list
    /// (Mermaid ids take no punctuation), labels carry the names.
    pub fn mermaid(&self) -> String {
        let ids: BTreeMap<&str, usize> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(n, (id, _, _))| (id.as_str(), n))
            .collect();
        // An edge to something not drawn (a group nobody declares) gets a
        // node of its own, named by its id.
        let short = |id: &str| match ids.get(id) {
            Some(n) => format!("n{n}"),
            None => format!(
                "x_{}",
                id.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            ),
        };
        let mut out = String::from("flowchart LR\n");
        for (n, (_, label, shape)) in self.nodes.iter().enumerate() {
            let label = label.replace('"', "#quot;");
            let node = match shape {
                Shape::OsBuilder | Shape::Image => format!("n{n}[\"{label}\"]"),
                Shape::Instance => format!("n{n}([\"{label}\"])"),
                Shape::Storage => format!("n{n}[(\"{label}\")]"),
                Shape::Group => format!("n{n}{{{{\"{label}\"}}}}"),
                Shape::Build => format!("n{n}>\"{label}\"]"),
            };
            out.push_str(&format!("  {node}\n"));
        }
        for (from, to, label) in &self.edges {
            out.push_str(&format!(
                "  {} -->|{}| {}\n",
                short(from),
                label.replace('|', "/"),
                short(to)
            ));
        }
        out
    }
}

fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}
