//! The process's one metrics registry. Every controller, collector, work queue and the API
//! server register their metrics here; `/metrics` encodes it once.
//!
//! Metrics are prometheus-client's typed ones (`Counter`, `Gauge`, `Family`), plus [`GaugeFn`]
//! for values another part of the process already holds (a queue's length, the store's size),
//! read when scraped instead of being kept in step.

use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Metric, Registry as Inner};

use crate::queue::QueueMetrics;

/// A cheap handle on the registry (clones share it).
#[derive(Clone, Default)]
pub struct Registry {
    inner: Arc<Mutex<Inner>>,
    /// The `workqueue_*` families, registered by the first queue that reports here.
    queues: Arc<OnceLock<QueueMetrics>>,
}

impl Registry {
    /// The `workqueue_*` families every work queue of the process reports to (registered once,
    /// whichever controller or collector asks first).
    pub fn queues(&self) -> QueueMetrics {
        self.queues
            .get_or_init(|| QueueMetrics::register(self))
            .clone()
    }

    /// Registers a metric under `name` (a counter's exposed name gets `_total` appended, as
    /// OpenMetrics requires) with `help`, a sentence (prometheus-client ends it with the full
    /// stop, so one given is not doubled). A family is listed (`# HELP`, `# TYPE`) even
    /// before its first series, so a scrape shows every metric there is.
    pub fn register(&self, name: &str, help: &str, metric: impl Metric) {
        let help = help.strip_suffix('.').unwrap_or(help);
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .register(name, help, Listed(metric));
    }

    /// The exposition of every registered metric in `format`.
    pub fn encode(&self, format: Format) -> String {
        let mut out = String::new();
        let registry = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        // Writing into a String cannot fail.
        let _ = match format {
            Format::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &registry)
            }
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
        };
        out
    }
}

/// The text formats `/metrics` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The Prometheus text format 0.0.4: what a scraper gets unless it asks for OpenMetrics,
    /// as client_golang's `promhttp` answers.
    Prometheus,
    /// OpenMetrics 1.0 text (ends with `# EOF`), for scrapers that prefer it (Prometheus does).
    OpenMetrics,
}

impl Format {
    /// The format an `Accept` header prefers: OpenMetrics when it weighs
    /// `application/openmetrics-text` above the plain text format (`text/plain`, `text/*`,
    /// `*/*`), else the Prometheus text format.
    pub fn negotiate(accept: &str) -> Self {
        let (mut openmetrics, mut text) = (0.0f32, 0.0f32);
        for range in accept.split(',') {
            let mut params = range.split(';').map(str::trim);
            let media = params.next().unwrap_or_default().to_ascii_lowercase();
            let q = params
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            match media.as_str() {
                "application/openmetrics-text" => openmetrics = openmetrics.max(q),
                "text/plain" | "text/*" | "*/*" => text = text.max(q),
                _ => {}
            }
        }
        if openmetrics > 0.0 && openmetrics > text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A registered metric, never skipped as empty (see [`Registry::register`]).
#[derive(Debug)]
struct Listed<M>(M);

impl<M: EncodeMetric> EncodeMetric for Listed<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> MetricType {
        self.0.metric_type()
    }
}

type Series<S> = dyn Fn() -> Vec<(S, i64)> + Send + Sync;

/// A gauge read when scraped: its series and their values come from a function over state
/// another part of the process owns, so nothing has to keep a copy in step.
pub struct GaugeFn<S = NoLabels>(Arc<Series<S>>);

/// The label set of an unlabelled series.
pub type NoLabels = [(&'static str, &'static str); 0];

impl GaugeFn {
    /// An unlabelled gauge whose value is `read()`.
    pub fn new(read: impl Fn() -> i64 + Send + Sync + 'static) -> Self {
        Self(Arc::new(move || vec![([], read())]))
    }
}

impl<S> GaugeFn<S> {
    /// A gauge family: `read()` lists each series' labels and value (none: no sample).
    pub fn family(read: impl Fn() -> Vec<(S, i64)> + Send + Sync + 'static) -> Self {
        Self(Arc::new(read))
    }
}

impl<S> fmt::Debug for GaugeFn<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GaugeFn")
    }
}

impl<S> TypedMetric for GaugeFn<S> {
    const TYPE: MetricType = MetricType::Gauge;
}

impl<S: EncodeLabelSet> EncodeMetric for GaugeFn<S> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), fmt::Error> {
        for (labels, value) in (self.0)() {
            encoder.encode_family(&labels)?.encode_gauge(&value)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;

    use super::*;

    #[test]
    fn a_counter_is_exposed_with_its_total_suffix() {
        let registry = Registry::default();
        let c = Counter::<u64>::default();
        registry.register("kgc_example", "An example.", c.clone());
        c.inc();
        for format in [Format::Prometheus, Format::OpenMetrics] {
            assert!(registry.encode(format).contains("kgc_example_total 1\n"));
        }
    }

    #[test]
    fn each_format_is_framed_as_its_readers_expect() {
        let registry = Registry::default();
        registry.register("kgc_example", "An example.", Counter::<u64>::default());
        let text = registry.encode(Format::Prometheus);
        assert!(
            text.contains("# HELP kgc_example_total An example.\n"),
            "{text}"
        );
        assert!(
            text.contains("# TYPE kgc_example_total counter\n"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
        let open = registry.encode(Format::OpenMetrics);
        assert!(open.contains("# TYPE kgc_example counter\n"), "{open}");
        assert!(open.ends_with("# EOF\n"), "{open}");
    }

    #[test]
    fn an_empty_family_is_still_listed() {
        let registry = Registry::default();
        let family = Family::<[(&'static str, &'static str); 1], Counter>::default();
        registry.register("kgc_things", "Things.", family);
        let text = registry.encode(Format::Prometheus);
        assert!(text.contains("# TYPE kgc_things_total counter\n"), "{text}");
    }

    #[test]
    fn a_gauge_fn_is_read_at_each_scrape() {
        let registry = Registry::default();
        let value = Arc::new(std::sync::atomic::AtomicI64::new(3));
        let v = Arc::clone(&value);
        registry.register(
            "kgc_depth",
            "Depth.",
            GaugeFn::new(move || v.load(std::sync::atomic::Ordering::Relaxed)),
        );
        registry.register(
            "kgc_queue_depth",
            "Depth by queue.",
            GaugeFn::family(|| vec![([("queue", "a")], 1), ([("queue", "b")], 2)]),
        );
        assert!(
            registry
                .encode(Format::Prometheus)
                .contains("kgc_depth 3\n")
        );
        value.store(5, std::sync::atomic::Ordering::Relaxed);
        let text = registry.encode(Format::OpenMetrics);
        assert!(text.contains("kgc_depth 5\n"), "{text}");
        assert!(text.contains("kgc_queue_depth{queue=\"a\"} 1\n"), "{text}");
        assert!(text.contains("kgc_queue_depth{queue=\"b\"} 2\n"), "{text}");
    }

    #[test]
    fn negotiation_prefers_openmetrics_only_when_asked() {
        assert_eq!(Format::negotiate(""), Format::Prometheus);
        assert_eq!(Format::negotiate("*/*"), Format::Prometheus);
        assert_eq!(
            Format::negotiate("text/plain;version=0.0.4;q=1,application/openmetrics-text;q=0.5"),
            Format::Prometheus
        );
        // Prometheus 3's default scrape protocols.
        assert_eq!(
            Format::negotiate(
                "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,\
                 application/openmetrics-text;version=0.0.1;q=0.5,\
                 text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,\
                 text/plain;version=0.0.4;q=0.3,*/*;q=0.2"
            ),
            Format::OpenMetrics
        );
        assert_eq!(
            Format::negotiate("application/openmetrics-text"),
            Format::OpenMetrics
        );
    }
}
