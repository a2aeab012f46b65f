//! `pods/exec`, `pods/attach` and `pods/portforward` (kubernetes/kubernetes
//! `pkg/registry/core/pod/rest/subresources.go`, `pkg/registry/core/pod/strategy.go`
//! `streamLocation`, `PortForwardLocation`).
//!
//! Upstream checks the pod, the container and the node, then proxies the upgraded connection to
//! the kubelet. A simulated node runs no process to connect to, so after the same checks (and
//! their refusals, word for word) the request gets a 400 `BadRequest` Status saying so, whether
//! it is kubectl's WebSocket GET or its SPDY POST fallback: client-go decodes the Status of a
//! failed upgrade, and kubectl prints `Error from server (BadRequest): …` — not NotFound, which
//! would send users looking for a missing pod.

use kgc_meta::{GroupResource, Status};
use serde_json::Value;

use crate::ApiServer;
use crate::request::{Query, RequestInfo};

/// Refuses a connect request to the pod, with the reason it cannot be served.
pub(crate) fn refuse(api: &ApiServer, req: &RequestInfo, query: &Query) -> Status {
    let ns = req.namespace.as_deref().unwrap_or_default();
    let name = req.name.as_deref().unwrap_or_default();
    let sub = req.subresource.as_deref().unwrap_or_default();
    let gr = GroupResource::new("", "pods");
    let Some(stored) = api.store.get(&gr, ns, name) else {
        return Status::not_found(&gr, name);
    };
    let pod = stored.value();
    if sub != "portforward"
        && let Err(status) = check_container(&pod, name, query.get("container"))
    {
        return status;
    }
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    if node.is_empty() {
        return Status::bad_request(format!("pod {name} does not have a host assigned"));
    }
    let what = match sub {
        "exec" => "exec",
        "attach" => "attach",
        _ => "port-forward",
    };
    Status::bad_request(format!(
        "{what} is not supported on a simulated node: pod {name:?} runs on node {node:?}, whose \
         kubelet is simulated by kgc and runs no container process (kubectl logs shows the \
         simulated log)"
    ))
}

/// `streamLocation`'s container choice: the named one must exist; without a name, the only
/// regular container, else a 400 listing them.
fn check_container(pod: &Value, name: &str, container: Option<&str>) -> Result<(), Status> {
    let names = |field: &str| -> Vec<&str> {
        pod["spec"][field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect()
    };
    let (regular, init) = (names("containers"), names("initContainers"));
    match container.filter(|c| !c.is_empty()) {
        Some(c)
            if regular.contains(&c)
                || init.contains(&c)
                || names("ephemeralContainers").contains(&c) =>
        {
            Ok(())
        }
        Some(c) => Err(Status::bad_request(format!(
            "container {c} is not valid for pod {name}"
        ))),
        None => match regular.len() {
            1 => Ok(()),
            0 => Err(Status::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => {
                let mut why = format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    regular.join(" ")
                );
                if !init.is_empty() {
                    why.push_str(&format!(
                        " or one of the init containers: [{}]",
                        init.join(" ")
                    ));
                }
                Err(Status::bad_request(why))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_container_is_chosen_as_upstream_chooses_it() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}});
        assert!(check_container(&pod, "p", Some("i")).is_ok());
        assert_eq!(
            check_container(&pod, "p", None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        assert_eq!(
            check_container(&pod, "p", Some("z")).unwrap_err().message,
            "container z is not valid for pod p"
        );
    }
}
