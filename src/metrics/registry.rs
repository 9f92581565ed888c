//! Registry, metric families and single-series handles.
//!
//! Why not `prometheus-client` (checked 2026-11-25 with 0.24): its `Family` has no bound on
//! the number of label sets, so a label fed an unbounded value would grow memory without end,
//! while ours folds every series past a cap into one `other` series ([`DEFAULT_MAX_SERIES`]);
//! wrapping each family to add that would keep most of this file anyway. It would also add
//! six crates (31 s of a dev build here, under load) and encode OpenMetrics, whose `# EOF`
//! and `_total` rules differ from the text format our scrapes and tests pin.
//!
//! Hot paths take one uncontended-in-practice `RwLock` read plus relaxed
//! atomics; a write lock is only taken the first time a label combination is
//! seen. Handles returned by `with` are `Arc` clones that callers may cache to
//! skip the lookup entirely.

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::text;

/// Default cap on distinct series per family; beyond it new label
/// combinations fold into the all-[`OVERFLOW_LABEL_VALUE`] series so a bug
/// that leaks unbounded values into labels cannot exhaust memory.
pub const DEFAULT_MAX_SERIES: usize = 1000;

/// Label value used for folded (over-cap or not allow-listed) series.
pub const OVERFLOW_LABEL_VALUE: &str = "other";

// ---------------------------------------------------------------------------
// Single series
// ---------------------------------------------------------------------------

/// Monotonic integer counter (one series). Cheap to clone; clones share state.
#[derive(Clone, Debug, Default)]
pub struct Counter(Arc<AtomicU64>);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Relaxed);
    }

    /// Adds `n` (wraps at `u64::MAX` rather than panicking).
    pub fn inc_by(&self, n: u64) {
        self.0.fetch_add(n, Relaxed);
    }

    /// Current value.
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }
}

/// Float gauge (one series), stored as `f64` bits in an `AtomicU64` so reads
/// and writes are lock-free. Cheap to clone; clones share state.
#[derive(Clone, Debug, Default)]
pub struct Gauge(Arc<AtomicU64>);

impl Gauge {
    /// Sets the value.
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Relaxed);
    }

    /// Adds `v` (CAS loop; negative values subtract).
    pub fn add(&self, v: f64) {
        // The closure always returns Some, so this never fails.
        let _ = self.0.fetch_update(Relaxed, Relaxed, |b| {
            Some((f64::from_bits(b) + v).to_bits())
        });
    }

    /// Subtracts `v`.
    pub fn sub(&self, v: f64) {
        self.add(-v);
    }

    /// Adds one.
    pub fn inc(&self) {
        self.add(1.0);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1.0);
    }

    /// Current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Relaxed))
    }

    /// Increments now and decrements when the guard drops, so in-flight
    /// gauges stay right across early returns and unwinding.
    pub fn inc_guard(&self) -> GaugeGuard {
        self.inc();
        GaugeGuard(self.clone())
    }
}

/// Decrements its gauge on drop; see [`Gauge::inc_guard`].
#[must_use = "the gauge is decremented when the guard is dropped"]
#[derive(Debug)]
pub struct GaugeGuard(Gauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Normalised bucket bounds plus their pre-rendered `le` strings.
#[derive(Clone, Debug)]
struct Buckets {
    bounds: Arc<[f64]>,
    le: Arc<[Box<str>]>,
}

impl Buckets {
    /// Sorts, dedups and drops non-finite bounds (`+Inf` is always implicit),
    /// so any input yields a valid, strictly increasing layout.
    fn new(raw: &[f64]) -> Self {
        let mut bounds: Vec<f64> = raw.iter().copied().filter(|b| b.is_finite()).collect();
        bounds.sort_by(f64::total_cmp);
        bounds.dedup();
        let le = bounds
            .iter()
            .map(|&b| {
                let mut s = String::new();
                text::write_f64(&mut s, b);
                s.into_boxed_str()
            })
            .collect();
        Self {
            bounds: bounds.into(),
            le,
        }
    }
}

impl PartialEq for Buckets {
    fn eq(&self, other: &Self) -> bool {
        self.bounds == other.bounds
    }
}

#[derive(Debug)]
struct HistogramCore {
    buckets: Buckets,
    /// Per-bucket (non-cumulative) counts; the last slot is the `+Inf`
    /// overflow. `_count` is derived from these so it always equals `+Inf`.
    counts: Box<[AtomicU64]>,
    sum_bits: AtomicU64,
}

/// Histogram (one series) with fixed buckets. Cheap to clone; clones share
/// state.
#[derive(Clone, Debug)]
pub struct Histogram(Arc<HistogramCore>);

impl Histogram {
    fn new(buckets: &Buckets) -> Self {
        let counts = (0..=buckets.bounds.len())
            .map(|_| AtomicU64::new(0))
            .collect();
        Self(Arc::new(HistogramCore {
            buckets: buckets.clone(),
            counts,
            sum_bits: AtomicU64::new(0f64.to_bits()),
        }))
    }

    /// Records one observation. NaN lands in `+Inf` and makes `_sum` NaN,
    /// matching the Go client.
    pub fn observe(&self, v: f64) {
        let core = &*self.0;
        // First bound with v <= bound; NaN goes to +Inf like the Go client.
        let idx = core
            .buckets
            .bounds
            .partition_point(|&b| b < v || v.is_nan());
        if let Some(slot) = core.counts.get(idx) {
            slot.fetch_add(1, Relaxed);
        }
        let _ = core.sum_bits.fetch_update(Relaxed, Relaxed, |b| {
            Some((f64::from_bits(b) + v).to_bits())
        });
    }

    /// Records a duration in seconds.
    pub fn observe_duration(&self, d: Duration) {
        self.observe(d.as_secs_f64());
    }

    /// Starts a timer that records elapsed seconds when dropped.
    pub fn start_timer(&self) -> HistogramTimer {
        HistogramTimer {
            histogram: Some(self.clone()),
            start: Instant::now(),
        }
    }

    /// Total observations.
    pub fn count(&self) -> u64 {
        self.0
            .counts
            .iter()
            .fold(0u64, |acc, c| acc.saturating_add(c.load(Relaxed)))
    }

    /// Sum of observations.
    pub fn sum(&self) -> f64 {
        f64::from_bits(self.0.sum_bits.load(Relaxed))
    }
}

/// Records elapsed time into a histogram on drop (or on [`observe`]).
///
/// [`observe`]: HistogramTimer::observe
#[must_use = "the timer records when dropped; dropping it immediately records ~0s"]
#[derive(Debug)]
pub struct HistogramTimer {
    histogram: Option<Histogram>,
    start: Instant,
}

impl HistogramTimer {
    /// Records now and returns the elapsed seconds.
    pub fn observe(mut self) -> f64 {
        let secs = self.start.elapsed().as_secs_f64();
        if let Some(h) = self.histogram.take() {
            h.observe(secs);
        }
        secs
    }

    /// Drops the timer without recording (e.g. the operation was abandoned).
    pub fn discard(mut self) {
        self.histogram = None;
    }
}

impl Drop for HistogramTimer {
    fn drop(&mut self) {
        if let Some(h) = self.histogram.take() {
            h.observe_duration(self.start.elapsed());
        }
    }
}

// ---------------------------------------------------------------------------
// Families
// ---------------------------------------------------------------------------

/// What a family needs from its series type.
trait Series: Clone + Send + Sync + 'static {
    type Config: Clone + PartialEq + Send + Sync;
    const TYPE: &'static str;
    fn create(config: &Self::Config) -> Self;
    fn render(&self, name: &str, labels: &str, out: &mut String);
    fn wrap(family: Arc<Family<Self>>) -> Collector;
    fn unwrap(collector: &Collector) -> Option<&Arc<Family<Self>>>;
}

impl Series for Counter {
    type Config = ();
    const TYPE: &'static str = "counter";
    fn create(_: &()) -> Self {
        Self::default()
    }
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        text::write_sample_prefix(out, name, "", labels);
        text::write_u64(out, self.get());
        out.push('\n');
    }
    fn wrap(family: Arc<Family<Self>>) -> Collector {
        Collector::Counter(family)
    }
    fn unwrap(collector: &Collector) -> Option<&Arc<Family<Self>>> {
        match collector {
            Collector::Counter(f) => Some(f),
            _ => None,
        }
    }
}

impl Series for Gauge {
    type Config = ();
    const TYPE: &'static str = "gauge";
    fn create(_: &()) -> Self {
        Self::default()
    }
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        text::write_sample_prefix(out, name, "", labels);
        text::write_f64(out, self.get());
        out.push('\n');
    }
    fn wrap(family: Arc<Family<Self>>) -> Collector {
        Collector::Gauge(family)
    }
    fn unwrap(collector: &Collector) -> Option<&Arc<Family<Self>>> {
        match collector {
            Collector::Gauge(f) => Some(f),
            _ => None,
        }
    }
}

impl Series for Histogram {
    type Config = Buckets;
    const TYPE: &'static str = "histogram";
    fn create(config: &Buckets) -> Self {
        Self::new(config)
    }
    fn render(&self, name: &str, labels: &str, out: &mut String) {
        let core = &*self.0;
        // Read sum first: a concurrent observe then shows up in counts, never
        // the other way round, which is the less surprising skew.
        let sum = self.sum();
        let mut cumulative = 0u64;
        for (i, slot) in core.counts.iter().enumerate() {
            cumulative = cumulative.saturating_add(slot.load(Relaxed));
            let le = core.buckets.le.get(i).map_or("+Inf", |s| s);
            out.push_str(name);
            out.push_str("_bucket{");
            if !labels.is_empty() {
                out.push_str(labels);
                out.push(',');
            }
            out.push_str("le=\"");
            out.push_str(le);
            out.push_str("\"} ");
            text::write_u64(out, cumulative);
            out.push('\n');
        }
        text::write_sample_prefix(out, name, "_sum", labels);
        text::write_f64(out, sum);
        out.push('\n');
        text::write_sample_prefix(out, name, "_count", labels);
        text::write_u64(out, cumulative);
        out.push('\n');
    }
    fn wrap(family: Arc<Family<Self>>) -> Collector {
        Collector::Histogram(family)
    }
    fn unwrap(collector: &Collector) -> Option<&Arc<Family<Self>>> {
        match collector {
            Collector::Histogram(f) => Some(f),
            _ => None,
        }
    }
}

struct Entry<M> {
    values: Box<[Box<str>]>,
    /// Pre-rendered, escaped `k="v",...` so exposition is just copying.
    labels: Box<str>,
    metric: M,
}

struct SeriesMap<M> {
    /// Keyed by a hash of the label values so lookups need no allocation;
    /// collisions are resolved by comparing values in the bucket.
    by_hash: HashMap<u64, Vec<Arc<Entry<M>>>>,
    len: usize,
}

struct Family<M: Series> {
    name: Box<str>,
    help: Box<str>,
    label_names: Box<[Box<str>]>,
    max_series: usize,
    config: M::Config,
    hasher: RandomState,
    series: RwLock<SeriesMap<M>>,
}

impl<M: Series> Family<M> {
    fn new(
        name: Box<str>,
        help: Box<str>,
        label_names: Box<[Box<str>]>,
        max_series: usize,
        config: M::Config,
    ) -> Self {
        Self {
            name,
            help,
            label_names,
            max_series,
            config,
            hasher: RandomState::new(),
            series: RwLock::new(SeriesMap {
                by_hash: HashMap::new(),
                len: 0,
            }),
        }
    }

    fn hash(&self, values: &[&str]) -> u64 {
        let mut h = self.hasher.build_hasher();
        for v in values {
            h.write(v.as_bytes());
            h.write_u8(0xff); // separator, as `str`'s Hash impl does
        }
        h.finish()
    }

    fn find<'m>(map: &'m SeriesMap<M>, hash: u64, values: &[&str]) -> Option<&'m M> {
        map.by_hash.get(&hash)?.iter().find_map(|e| {
            let same = e.values.len() == values.len()
                && e.values.iter().zip(values).all(|(a, b)| **a == **b);
            same.then_some(&e.metric)
        })
    }

    /// Runs `f` on the series for `values`, creating it (or folding into the
    /// overflow series) on first sight. The common case is a read lock only.
    fn with_series<R>(&self, values: &[&str], f: impl FnOnce(&M) -> R) -> R {
        let hash = self.hash(values);
        {
            let map = self.series.read().unwrap_or_else(PoisonError::into_inner);
            if let Some(m) = Self::find(&map, hash, values) {
                return f(m);
            }
        }
        let metric = self.get_or_insert(hash, values);
        f(&metric)
    }

    fn get_or_insert(&self, hash: u64, values: &[&str]) -> M {
        let mut map = self.series.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = Self::find(&map, hash, values) {
            return m.clone();
        }
        if map.len < self.max_series {
            return self.insert(&mut map, hash, values);
        }
        let other = vec![OVERFLOW_LABEL_VALUE; values.len()];
        let other_hash = self.hash(&other);
        if let Some(m) = Self::find(&map, other_hash, &other) {
            return m.clone();
        }
        // The overflow series may exceed the cap by exactly one.
        self.insert(&mut map, other_hash, &other)
    }

    fn insert(&self, map: &mut SeriesMap<M>, hash: u64, values: &[&str]) -> M {
        let values: Box<[Box<str>]> = values.iter().map(|v| Box::<str>::from(*v)).collect();
        let labels = text::render_label_pairs(&self.label_names, &values);
        let metric = M::create(&self.config);
        map.by_hash.entry(hash).or_default().push(Arc::new(Entry {
            values,
            labels,
            metric: metric.clone(),
        }));
        map.len += 1;
        metric
    }

    fn series_count(&self) -> usize {
        self.series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len
    }

    fn render(&self, out: &mut String) {
        // Snapshot Arcs so the lock is not held while formatting.
        let mut entries: Vec<Arc<Entry<M>>> = {
            let map = self.series.read().unwrap_or_else(PoisonError::into_inner);
            map.by_hash.values().flatten().cloned().collect()
        };
        if entries.is_empty() {
            return; // like the Go client: no samples, no HELP/TYPE block
        }
        entries.sort_unstable_by(|a, b| a.values.cmp(&b.values));
        out.push_str("# HELP ");
        out.push_str(&self.name);
        out.push(' ');
        text::escape_help(&self.help, out);
        out.push_str("\n# TYPE ");
        out.push_str(&self.name);
        out.push(' ');
        out.push_str(M::TYPE);
        out.push('\n');
        for e in &entries {
            e.metric.render(&self.name, &e.labels, out);
        }
    }
}

macro_rules! family_handle {
    ($(#[$doc:meta])* $vec:ident, $series:ident) => {
        $(#[$doc])*
        pub struct $vec<const N: usize> {
            family: Arc<Family<$series>>,
            _labels: PhantomData<[(); N]>,
        }

        impl<const N: usize> Clone for $vec<N> {
            fn clone(&self) -> Self {
                Self {
                    family: Arc::clone(&self.family),
                    _labels: PhantomData,
                }
            }
        }

        impl<const N: usize> fmt::Debug for $vec<N> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($vec))
                    .field("name", &self.family.name)
                    .field("labels", &self.family.label_names)
                    .finish_non_exhaustive()
            }
        }

        impl<const N: usize> $vec<N> {
            fn from_family(family: Arc<Family<$series>>) -> Self {
                Self {
                    family,
                    _labels: PhantomData,
                }
            }

            /// Handle for one label combination (values in label-name order).
            /// Cache it where a call site records repeatedly.
            pub fn with(&self, values: &[&str; N]) -> $series {
                self.family.with_series(values, Clone::clone)
            }

            /// Metric name.
            pub fn name(&self) -> &str {
                &self.family.name
            }

            /// Number of live series (including the overflow series).
            pub fn series_count(&self) -> usize {
                self.family.series_count()
            }
        }
    };
}

family_handle!(
    /// Counter family with `N` fixed label names.
    CounterVec,
    Counter
);
family_handle!(
    /// Gauge family with `N` fixed label names.
    GaugeVec,
    Gauge
);
family_handle!(
    /// Histogram family with `N` fixed label names and fixed buckets.
    HistogramVec,
    Histogram
);

impl<const N: usize> CounterVec<N> {
    /// Adds one to the series for `values`.
    pub fn inc(&self, values: &[&str; N]) {
        self.family.with_series(values, Counter::inc);
    }

    /// Adds `n` to the series for `values`.
    pub fn inc_by(&self, values: &[&str; N], n: u64) {
        self.family.with_series(values, |c| c.inc_by(n));
    }
}

impl<const N: usize> GaugeVec<N> {
    /// Sets the series for `values`.
    pub fn set(&self, values: &[&str; N], v: f64) {
        self.family.with_series(values, |g| g.set(v));
    }

    /// Adds `v` to the series for `values`.
    pub fn add(&self, values: &[&str; N], v: f64) {
        self.family.with_series(values, |g| g.add(v));
    }

    /// Adds one to the series for `values`.
    pub fn inc(&self, values: &[&str; N]) {
        self.family.with_series(values, Gauge::inc);
    }

    /// Subtracts one from the series for `values`.
    pub fn dec(&self, values: &[&str; N]) {
        self.family.with_series(values, Gauge::dec);
    }
}

impl<const N: usize> HistogramVec<N> {
    /// Records `v` into the series for `values`.
    pub fn observe(&self, values: &[&str; N], v: f64) {
        self.family.with_series(values, |h| h.observe(v));
    }

    /// Records a duration (seconds) into the series for `values`.
    pub fn observe_duration(&self, values: &[&str; N], d: Duration) {
        self.observe(values, d.as_secs_f64());
    }

    /// Starts a timer on the series for `values`; records on drop.
    pub fn start_timer(&self, values: &[&str; N]) -> HistogramTimer {
        self.with(values).start_timer()
    }
}

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

#[derive(Clone)]
enum Collector {
    Counter(Arc<Family<Counter>>),
    Gauge(Arc<Family<Gauge>>),
    Histogram(Arc<Family<Histogram>>),
}

impl Collector {
    fn name(&self) -> &str {
        match self {
            Self::Counter(f) => &f.name,
            Self::Gauge(f) => &f.name,
            Self::Histogram(f) => &f.name,
        }
    }

    fn render(&self, out: &mut String) {
        match self {
            Self::Counter(f) => f.render(out),
            Self::Gauge(f) => f.render(out),
            Self::Histogram(f) => f.render(out),
        }
    }
}

/// Thread-safe set of metric families rendered together.
///
/// Registration is infallible and get-or-create: registering an existing
/// name with the same type, label names (and buckets) returns the existing
/// family. A conflicting re-registration returns a working but *detached*
/// family that is never exported, because emitting two families with one
/// name would make the whole scrape invalid.
pub struct Registry {
    max_series: usize,
    families: RwLock<Vec<Collector>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let families = self.families.read().unwrap_or_else(PoisonError::into_inner);
        let names: Vec<&str> = families.iter().map(Collector::name).collect();
        f.debug_struct("Registry")
            .field("max_series", &self.max_series)
            .field("families", &names)
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// Empty registry with [`DEFAULT_MAX_SERIES`] per family.
    pub fn new() -> Self {
        Self::with_max_series(DEFAULT_MAX_SERIES)
    }

    /// Empty registry with a custom per-family series cap.
    pub fn with_max_series(max_series: usize) -> Self {
        Self {
            max_series,
            families: RwLock::new(Vec::new()),
        }
    }

    fn register<M: Series>(
        &self,
        name: &str,
        help: &str,
        labels: &[&'static str],
        config: M::Config,
    ) -> Arc<Family<M>> {
        let name = text::sanitize_metric_name(name);
        let label_names: Box<[Box<str>]> = labels
            .iter()
            .map(|l| {
                let l = text::sanitize_label_name(l);
                // `le` is reserved for histogram buckets.
                if M::TYPE == "histogram" && l == "le" {
                    "le_".into()
                } else {
                    l.into_boxed_str()
                }
            })
            .collect();
        let mut families = self
            .families
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = families.iter().find(|c| c.name() == name) {
            if let Some(f) = M::unwrap(existing)
                && f.label_names == label_names
                && f.config == config
            {
                return Arc::clone(f);
            }
            return Arc::new(Family::new(
                name.into(),
                help.into(),
                label_names,
                self.max_series,
                config,
            ));
        }
        let family = Arc::new(Family::new(
            name.into(),
            help.into(),
            label_names,
            self.max_series,
            config,
        ));
        families.push(M::wrap(Arc::clone(&family)));
        family
    }

    /// Registers (or fetches) a counter family.
    pub fn counter_vec<const N: usize>(
        &self,
        name: &str,
        help: &str,
        labels: [&'static str; N],
    ) -> CounterVec<N> {
        CounterVec::from_family(self.register(name, help, &labels, ()))
    }

    /// Registers (or fetches) a gauge family.
    pub fn gauge_vec<const N: usize>(
        &self,
        name: &str,
        help: &str,
        labels: [&'static str; N],
    ) -> GaugeVec<N> {
        GaugeVec::from_family(self.register(name, help, &labels, ()))
    }

    /// Registers (or fetches) a histogram family. `buckets` are upper bounds;
    /// they are sorted and deduplicated, and `+Inf` is always added.
    pub fn histogram_vec<const N: usize>(
        &self,
        name: &str,
        help: &str,
        labels: [&'static str; N],
        buckets: &[f64],
    ) -> HistogramVec<N> {
        HistogramVec::from_family(self.register(name, help, &labels, Buckets::new(buckets)))
    }

    /// Registers (or fetches) an unlabelled counter; it is exported as 0 at once.
    pub fn counter(&self, name: &str, help: &str) -> Counter {
        self.counter_vec(name, help, []).with(&[])
    }

    /// Registers (or fetches) an unlabelled gauge; it is exported as 0 at once.
    pub fn gauge(&self, name: &str, help: &str) -> Gauge {
        self.gauge_vec(name, help, []).with(&[])
    }

    /// Registers (or fetches) an unlabelled histogram.
    pub fn histogram(&self, name: &str, help: &str, buckets: &[f64]) -> Histogram {
        self.histogram_vec(name, help, [], buckets).with(&[])
    }

    /// Text exposition of every family, sorted by name, series sorted by
    /// label values, so output is stable across scrapes.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(16 * 1024);
        self.render_into(&mut out);
        out
    }

    /// Like [`render`](Self::render) but appends to a caller buffer.
    pub fn render_into(&self, out: &mut String) {
        let mut families: Vec<Collector> = self
            .families
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        families.sort_unstable_by(|a, b| a.name().cmp(b.name()));
        for f in &families {
            f.render(out);
        }
    }
}
