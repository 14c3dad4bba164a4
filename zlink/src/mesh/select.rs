//! Select-one: smooth weighted round-robin with the reference's tie-break and memory rules,
//! over a candidate snapshot that is rebuilt when peers change (never per call).

/// One channel's candidates and their accumulators.
///
/// Each pick adds every candidate's weight to its accumulator, picks the largest (ties go to
/// the smaller RID by unsigned bytes, shorter prefix first), and subtracts the weight sum
/// from the winner. When the candidate list changes, surviving candidates keep their
/// accumulators and the others are dropped.
#[derive(Debug)]
pub(crate) struct SmoothWeighted<T> {
    slots: Vec<Slot<T>>,
}

#[derive(Debug)]
struct Slot<T> {
    key: std::sync::Arc<str>,
    weight: u32,
    accumulator: i64,
    target: T,
}

impl<T> Default for SmoothWeighted<T> {
    fn default() -> Self {
        SmoothWeighted { slots: Vec::new() }
    }
}

impl<T: Clone> SmoothWeighted<T> {
    /// Replaces the candidates (zero weights are dropped); survivors keep their
    /// accumulators, newcomers start at 0.
    pub(crate) fn set_candidates(
        &mut self,
        candidates: impl IntoIterator<Item = (std::sync::Arc<str>, u32, T)>,
    ) {
        let mut old = std::mem::take(&mut self.slots);
        for (key, weight, target) in candidates {
            if weight == 0 {
                continue;
            }
            let accumulator = old
                .iter()
                .position(|s| s.key == key)
                .map_or(0, |i| old.swap_remove(i).accumulator);
            self.slots.push(Slot {
                key,
                weight,
                accumulator,
                target,
            });
        }
    }

    /// Whether no candidate is eligible.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Picks one candidate, skipping those `excluded` says no to (they neither gain nor
    /// lose accumulated weight). `None` when none is eligible.
    pub(crate) fn pick(&mut self, excluded: impl Fn(&T) -> bool) -> Option<T> {
        let mut total: i64 = 0;
        let mut best: Option<usize> = None;
        for i in 0..self.slots.len() {
            if excluded(&self.slots[i].target) {
                continue;
            }
            let slot = &mut self.slots[i];
            slot.accumulator += i64::from(slot.weight);
            total += i64::from(slot.weight);
            let better = match best {
                None => true,
                Some(b) => {
                    let (acc, key) = (self.slots[i].accumulator, &self.slots[i].key);
                    let current = &self.slots[b];
                    acc > current.accumulator
                        || (acc == current.accumulator && key.as_bytes() < current.key.as_bytes())
                }
            };
            if better {
                best = Some(i);
            }
        }
        let winner = &mut self.slots[best?];
        winner.accumulator -= total;
        Some(winner.target.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn set(sw: &mut SmoothWeighted<Arc<str>>, cands: &[(&str, u32)]) {
        sw.set_candidates(
            cands
                .iter()
                .map(|(k, w)| (Arc::from(*k), *w, Arc::from(*k))),
        );
    }

    fn sequence(sw: &mut SmoothWeighted<Arc<str>>, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| {
                sw.pick(|_| false)
                    .expect("a candidate is picked")
                    .to_string()
            })
            .collect()
    }

    fn accumulator(sw: &SmoothWeighted<Arc<str>>, key: &str) -> Option<i64> {
        sw.slots
            .iter()
            .find(|s| &*s.key == key)
            .map(|s| s.accumulator)
    }

    #[test]
    fn weights_100_300_give_b_a_b_b() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("a", 100), ("b", 300)]);
        assert_eq!(
            sequence(&mut sw, 8),
            ["b", "a", "b", "b", "b", "a", "b", "b"]
        );
    }

    #[test]
    fn equal_weights_alternate_starting_with_smaller_rid() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("b", 100), ("a", 100)]);
        assert_eq!(sequence(&mut sw, 4), ["a", "b", "a", "b"]);
    }

    #[test]
    fn tie_break_is_unsigned_bytes_shorter_prefix_first() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("ab", 1), ("a", 1)]);
        assert_eq!(sequence(&mut sw, 1), ["a"]);
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("é", 1), ("z", 1)]);
        assert_eq!(sequence(&mut sw, 1), ["z"]);
    }

    #[test]
    fn zero_weight_is_never_picked_and_none_when_all_zero() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("a", 0), ("b", 100)]);
        assert!(sequence(&mut sw, 5).iter().all(|r| r == "b"));
        set(&mut sw, &[("a", 0)]);
        assert!(sw.is_empty());
        assert_eq!(sw.pick(|_| false), None);
    }

    #[test]
    fn surviving_candidates_keep_their_accumulators() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("a", 100), ("b", 100), ("c", 100)]);
        assert_eq!(sequence(&mut sw, 1), ["a"]); // a=-200 b=100 c=100
        set(&mut sw, &[("b", 100), ("c", 100)]);
        // b keeps 100 and c keeps 100: b=200, c=200 -> tie -> b.
        assert_eq!(sequence(&mut sw, 2), ["b", "c"]);
        // a comes back fresh at 0 (its old -200 was dropped): a=100, b=200, c=200.
        set(&mut sw, &[("a", 100), ("b", 100), ("c", 100)]);
        assert_eq!(sequence(&mut sw, 1), ["b"]);
        assert_eq!(accumulator(&sw, "a"), Some(100));
    }

    #[test]
    fn an_excluded_candidate_is_skipped_without_changing_its_accumulator() {
        let mut sw = SmoothWeighted::default();
        set(&mut sw, &[("a", 100), ("b", 100)]);
        let picked = sw.pick(|k: &Arc<str>| &**k == "a").expect("b is eligible");
        assert_eq!(&*picked, "b");
        assert_eq!(accumulator(&sw, "a"), Some(0));
        assert_eq!(sw.pick(|_| true), None);
    }
}
