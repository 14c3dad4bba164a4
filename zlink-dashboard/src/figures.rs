//! Request rate and p99 per surface, worked out by the node's own dashboard from its
//! Prometheus text while a page is open (no collector elsewhere): the difference between
//! two renders, one update apart.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

/// One surface's figures over the last update.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct SurfaceFigures {
    /// `channel`, `node`, `spot` or `actor`.
    pub(crate) surface: String,
    /// Calls per second the application made.
    pub(crate) calls_per_second: f64,
    /// The upper bound, in milliseconds, of the duration bucket that holds the 99th
    /// percentile of the requests that ended; `None` when none ended.
    pub(crate) p99_ms: Option<f64>,
}

/// The totals of one render, per surface.
#[derive(Default, Clone)]
struct Totals {
    calls: BTreeMap<String, f64>,
    /// Cumulative bucket counts per surface, by upper bound (summed over outcomes).
    buckets: BTreeMap<String, BTreeMap<Bound, f64>>,
}

/// A bucket's upper bound, ordered (`+Inf` last).
#[derive(Clone, Copy, PartialEq)]
struct Bound(f64);

impl PartialOrd for Bound {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Eq for Bound {}

impl Ord for Bound {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The previous render's totals, to difference the next one against.
#[derive(Default)]
pub(crate) struct Figures {
    previous: Option<(Instant, Totals)>,
}

impl Figures {
    /// The figures of node `rid` since the last call, from the Prometheus text `text`
    /// (the first call has nothing to compare with, and reports zero).
    pub(crate) fn update(&mut self, text: &str, rid: &str) -> Vec<SurfaceFigures> {
        let now = Instant::now();
        let totals = totals(text, rid);
        let figures = match &self.previous {
            Some((then, before)) => {
                let seconds = now.duration_since(*then).as_secs_f64().max(1e-3);
                difference(before, &totals, seconds)
            }
            None => difference(&totals, &totals, 1.0),
        };
        self.previous = Some((now, totals));
        figures
    }
}

fn difference(before: &Totals, now: &Totals, seconds: f64) -> Vec<SurfaceFigures> {
    now.calls
        .iter()
        .map(|(surface, total)| {
            let earlier = before.calls.get(surface).copied().unwrap_or(0.0);
            let empty = BTreeMap::new();
            let then = before.buckets.get(surface).unwrap_or(&empty);
            let buckets = now.buckets.get(surface).unwrap_or(&empty);
            SurfaceFigures {
                surface: surface.clone(),
                calls_per_second: ((total - earlier).max(0.0) / seconds * 10.0).round() / 10.0,
                p99_ms: p99(then, buckets),
            }
        })
        .collect()
}

/// The bound of the first bucket whose count grew by 99% of what the last one grew.
fn p99(then: &BTreeMap<Bound, f64>, now: &BTreeMap<Bound, f64>) -> Option<f64> {
    let grown = |bound: &Bound, count: &f64| count - then.get(bound).copied().unwrap_or(0.0);
    let (_, all) = now.iter().next_back()?;
    let all = all - then.values().next_back().copied().unwrap_or(0.0);
    if all <= 0.0 {
        return None;
    }
    now.iter()
        .find(|(bound, count)| grown(bound, count) >= 0.99 * all)
        .map(|(bound, _)| bound.0 * 1000.0)
}

/// The call totals and duration buckets of node `rid` in `text`.
fn totals(text: &str, rid: &str) -> Totals {
    let mut totals = Totals::default();
    for line in text.lines() {
        let Some((name, labels, value)) = sample(line) else {
            continue;
        };
        if label(labels, "rid") != Some(rid) {
            continue;
        }
        let Some(surface) = label(labels, "surface") else {
            continue;
        };
        match name {
            zlink::telemetry::names::CALLS => {
                *totals.calls.entry(surface.to_string()).or_default() += value;
            }
            "zlink_call_duration_seconds_bucket" => {
                let bound = match label(labels, "le") {
                    Some("+Inf") => f64::INFINITY,
                    Some(le) => match le.parse() {
                        Ok(le) => le,
                        Err(_) => continue,
                    },
                    None => continue,
                };
                *totals
                    .buckets
                    .entry(surface.to_string())
                    .or_default()
                    .entry(Bound(bound))
                    .or_default() += value;
            }
            _ => {}
        }
    }
    totals
}

/// `name{labels} value` → its parts.
fn sample(line: &str) -> Option<(&str, &str, f64)> {
    let (name, rest) = line.split_once('{')?;
    let (labels, value) = rest.rsplit_once('}')?;
    Some((name, labels, value.trim().parse().ok()?))
}

/// The value of label `key` in `labels` (`k="v",k2="v2"`; zlink's values hold no quotes
/// or commas).
fn label<'a>(labels: &'a str, key: &str) -> Option<&'a str> {
    labels.split(',').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = r#"
zlink_calls_total{mesh="m",rid="a",surface="channel",kind="request",outcome="ok"} 10
zlink_calls_total{mesh="m",rid="b",surface="channel",kind="request",outcome="ok"} 500
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="0.001"} 10
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="0.01"} 10
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="+Inf"} 10
"#;
    const AFTER: &str = r#"
zlink_calls_total{mesh="m",rid="a",surface="channel",kind="request",outcome="ok"} 110
zlink_calls_total{mesh="m",rid="a",surface="channel",kind="send",outcome="ok"} 0
zlink_calls_total{mesh="m",rid="b",surface="channel",kind="request",outcome="ok"} 900
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="0.001"} 90
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="0.01"} 109
zlink_call_duration_seconds_bucket{mesh="m",rid="a",surface="channel",outcome="ok",le="+Inf"} 110
"#;

    #[test]
    fn the_rate_and_p99_are_the_difference_of_two_renders_for_this_node_only() {
        let figures = difference(&totals(BEFORE, "a"), &totals(AFTER, "a"), 2.0);
        assert_eq!(
            figures,
            [SurfaceFigures {
                surface: "channel".into(),
                calls_per_second: 50.0,
                p99_ms: Some(10.0),
            }]
        );
    }

    #[test]
    fn garbage_lines_and_no_requests_give_no_p99_and_no_panic() {
        let text = "zlink_calls_total{rid=\"a\",surface=\"node\"} x\nnot a sample\n{}\n}{\n";
        let figures = difference(&totals(text, "a"), &totals(text, "a"), 1.0);
        assert!(figures.is_empty());
        let idle = difference(&totals(AFTER, "a"), &totals(AFTER, "a"), 1.0);
        assert_eq!(idle[0].p99_ms, None);
        assert_eq!(idle[0].calls_per_second, 0.0);
    }
}
