//! The ReplicationController controller against a spawned `kgc serve` with every controller
//! on, driven with kubectl: pods created Running with its controller reference, scaling,
//! `--cascade=orphan` and re-adoption of the same pods; and the API server's refusals
//! (a selector not matching the template, negative replicas) and defaults (selector and labels
//! from the template).

kgc_testsupport::bind_kgc!();

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod, ReplicationController};
use kgc_testsupport::pods::{active, controller_uid, running};
use kgc_testsupport::*;
use kube::Api;
use kube::api::ListParams;

const T: Duration = Duration::from_secs(30);

/// The documentation's `replication.yaml`, its selector left to the API server's defaulting.
const NGINX: &str = "apiVersion: v1
kind: ReplicationController
metadata:
  name: nginx
spec:
  replicas: 3
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx
";

#[tokio::test]
async fn test_replication_controller_creates_scales_orphans_and_adopts() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "rc").await;
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    let rcs: Api<ReplicationController> = Api::namespaced(s.client(), &ns);

    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], NGINX)
        .await;
    let rc = rcs.get("nginx").await.expect("the ReplicationController");
    let spec = rc.spec.clone().unwrap_or_default();
    let app = [("app".to_owned(), "nginx".to_owned())]
        .into_iter()
        .collect();
    assert_eq!(spec.selector.as_ref(), Some(&app), "selector defaulted");
    assert_eq!(rc.metadata.labels.as_ref(), Some(&app), "labels defaulted");
    let rc_uid = rc.metadata.uid.clone().expect("uid");
    eventually("three Running pods", T, || async {
        let p = active(&pods).await;
        p.len() == 3 && p.iter().all(running)
    })
    .await;
    for p in active(&pods).await {
        let refs = p.metadata.owner_references.clone().unwrap_or_default();
        assert_eq!(refs.len(), 1, "{refs:?}");
        let r = &refs[0];
        assert_eq!(
            (r.api_version.as_str(), r.kind.as_str(), r.name.as_str()),
            ("v1", "ReplicationController", "nginx")
        );
        assert_eq!(r.uid, rc_uid);
        assert_eq!(r.controller, Some(true));
        assert_eq!(r.block_owner_deletion, Some(true));
        assert!(
            p.metadata
                .name
                .as_deref()
                .unwrap_or_default()
                .starts_with("nginx-")
        );
    }
    eventually("the status counts them", T, || async {
        let rc = rcs.get("nginx").await.unwrap();
        let st = rc.status.unwrap_or_default();
        st.replicas == 3
            && st.ready_replicas == Some(3)
            && st.observed_generation == rc.metadata.generation
    })
    .await;
    let events: Api<Event> = Api::namespaced(s.client(), &ns);
    eventually("SuccessfulCreate events naming it", T, || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|e| {
                e.reason.as_deref() == Some("SuccessfulCreate")
                    && e.involved_object.kind.as_deref() == Some("ReplicationController")
                    && e.involved_object.uid.as_deref() == Some(rc_uid.as_str())
            })
            .count()
            == 3
    })
    .await;

    // Scaling to 1 deletes two.
    s.kubectl_ok(&["scale", "-n", &ns, "rc/nginx", "--replicas=1"])
        .await;
    eventually("one pod", T, || async { active(&pods).await.len() == 1 }).await;
    eventually("a SuccessfulDelete event", T, || async {
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| e.reason.as_deref() == Some("SuccessfulDelete"))
    })
    .await;

    // `--cascade=orphan`, then the same manifest again: the same pod adopted, two more made.
    s.kubectl_ok(&["delete", "-n", &ns, "rc", "nginx", "--cascade=orphan"])
        .await;
    eventually("an orphaned pod", T, || async {
        let p = active(&pods).await;
        p.len() == 1 && controller_uid(&p[0]).is_none()
    })
    .await;
    let orphan = active(&pods).await[0].metadata.uid.clone().unwrap();
    s.kubectl_stdin_ok(&["apply", "-n", &ns, "-f", "-"], NGINX)
        .await;
    let again = rcs
        .get("nginx")
        .await
        .expect("the new ReplicationController");
    let again_uid = again.metadata.uid.clone().expect("uid");
    assert_ne!(again_uid, rc_uid);
    eventually("the orphan adopted and two more pods", T, || async {
        let p = active(&pods).await;
        p.len() == 3
            && p.iter()
                .all(|p| controller_uid(p).as_deref() == Some(again_uid.as_str()))
    })
    .await;
    assert!(
        active(&pods)
            .await
            .iter()
            .any(|p| p.metadata.uid.as_deref() == Some(orphan.as_str())),
        "the orphan was adopted, not replaced"
    );
}

#[tokio::test]
async fn a_replication_controller_with_bad_input_is_refused() {
    let s = Server::living(&["--in-memory"]).await;
    let ns = fresh_namespace(&s.client(), "rc-bad").await;
    let mismatch = NGINX.replace(
        "  replicas: 3\n",
        "  replicas: 3\n  selector:\n    app: other\n",
    );
    let out = s
        .kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], &mismatch)
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "spec.template.metadata.labels: Invalid value: {\"app\":\"nginx\"}: `selector` does not match template `labels`"
        ),
        "{err}"
    );
    let negative = NGINX.replace("replicas: 3", "replicas: -1");
    let out = s
        .kubectl_stdin(&["apply", "-n", &ns, "-f", "-"], &negative)
        .await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
        "{err}"
    );
    let pods: Api<Pod> = Api::namespaced(s.client(), &ns);
    assert!(active(&pods).await.is_empty());
}
