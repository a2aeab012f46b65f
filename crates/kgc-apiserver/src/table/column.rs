//! `metav1.TableColumnDefinition`: the columns every printer shares and how a column is
//! rendered.

use serde_json::{Value, json};

pub(super) struct Col {
    pub(super) name: &'static str,
    pub(super) ty: &'static str,
    pub(super) format: &'static str,
    pub(super) priority: i32,
    pub(super) description: &'static str,
}

impl Col {
    pub(super) fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.ty,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

pub(super) const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        priority: 0,
        description,
    }
}

pub(super) const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        priority: 1,
        description,
    }
}

pub(super) const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

pub(super) const CREATED_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

pub(super) const CONTAINERS_DOC: &str = "Names of each container in the template.";

pub(super) const IMAGES_DOC: &str = "Images referenced by each container in the template.";

pub(super) const SELECTOR_DOC: &str = "A label query over pods that should match the replica count. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

pub(super) const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    priority: 0,
    description: NAME_DOC,
};

pub(super) const AGE: Col = col("Age", "string", CREATED_DOC);

pub(super) const CONTAINERS: Col = wide("Containers", "string", CONTAINERS_DOC);

pub(super) const IMAGES: Col = wide("Images", "string", IMAGES_DOC);

pub(super) const SELECTOR: Col = wide("Selector", "string", SELECTOR_DOC);

/// `rest.defaultTableConvertor`: kinds without a printer of their own.
pub(super) const DEFAULT_COLUMNS: &[Col] = &[NAME, col("Created At", "date", CREATED_DOC)];
