//! Select-one: smooth weighted round-robin with the reference's tie-break and memory rules.

use std::collections::HashMap;

/// One selectable target: its RID and current weight (> 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The target's RID (the tie-break key, compared as bytes).
    pub rid: String,
    /// The target's weight.
    pub weight: u32,
}

/// Accumulators for one channel's send path.
///
/// Each pick adds every candidate's weight to its accumulator, picks the largest (ties go to
/// the smaller RID by unsigned bytes, shorter prefix first), and subtracts the weight sum
/// from the winner. When the candidate list changes, surviving candidates keep their
/// accumulators and the others are dropped.
#[derive(Debug, Default)]
pub struct SmoothWeighted {
    accumulators: HashMap<String, i64>,
}

impl SmoothWeighted {
    /// Fresh state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Picks one of `candidates` (any order; zero weights are ignored). `None` when none is
    /// eligible.
    pub fn pick(&mut self, candidates: &[Candidate]) -> Option<String> {
        self.accumulators
            .retain(|rid, _| candidates.iter().any(|c| c.weight > 0 && &c.rid == rid));
        let total: i64 = candidates.iter().map(|c| i64::from(c.weight)).sum();
        let mut best: Option<(&str, i64)> = None;
        for c in candidates.iter().filter(|c| c.weight > 0) {
            let acc = self.accumulators.entry(c.rid.clone()).or_insert(0);
            *acc += i64::from(c.weight);
            let better = match best {
                None => true,
                Some((rid, value)) => {
                    *acc > value || (*acc == value && c.rid.as_bytes() < rid.as_bytes())
                }
            };
            if better {
                best = Some((&c.rid, *acc));
            }
        }
        let winner = best?.0.to_string();
        if let Some(acc) = self.accumulators.get_mut(&winner) {
            *acc -= total;
        }
        Some(winner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rid: &str, weight: u32) -> Candidate {
        Candidate {
            rid: rid.into(),
            weight,
        }
    }

    fn sequence(sw: &mut SmoothWeighted, cands: &[Candidate], n: usize) -> Vec<String> {
        (0..n)
            .map(|_| sw.pick(cands).expect("a candidate is picked"))
            .collect()
    }

    #[test]
    fn weights_100_300_give_b_a_b_b() {
        let mut sw = SmoothWeighted::new();
        let cands = [c("a", 100), c("b", 300)];
        assert_eq!(
            sequence(&mut sw, &cands, 8),
            ["b", "a", "b", "b", "b", "a", "b", "b"]
        );
    }

    #[test]
    fn equal_weights_alternate_starting_with_smaller_rid() {
        let mut sw = SmoothWeighted::new();
        let cands = [c("b", 100), c("a", 100)];
        assert_eq!(sequence(&mut sw, &cands, 4), ["a", "b", "a", "b"]);
    }

    #[test]
    fn tie_break_is_unsigned_bytes_shorter_prefix_first() {
        let mut sw = SmoothWeighted::new();
        assert_eq!(
            sw.pick(&[c("ab", 1), c("a", 1)])
                .expect("a candidate is picked"),
            "a"
        );
        let mut sw = SmoothWeighted::new();
        assert_eq!(
            sw.pick(&[c("é", 1), c("z", 1)])
                .expect("a candidate is picked"),
            "z"
        );
    }

    #[test]
    fn zero_weight_is_never_picked_and_none_when_all_zero() {
        let mut sw = SmoothWeighted::new();
        let cands = [c("a", 0), c("b", 100)];
        assert!(sequence(&mut sw, &cands, 5).iter().all(|r| r == "b"));
        assert_eq!(sw.pick(&[c("a", 0)]), None);
        assert_eq!(sw.pick(&[]), None);
    }

    #[test]
    fn surviving_candidates_keep_their_accumulators() {
        let mut sw = SmoothWeighted::new();
        let three = [c("a", 100), c("b", 100), c("c", 100)];
        assert_eq!(sw.pick(&three).expect("a candidate is picked"), "a"); // a=-200 b=100 c=100
        let two = [c("b", 100), c("c", 100)];
        // b keeps 100 and c keeps 100: b=200, c=200 -> tie -> b.
        assert_eq!(sw.pick(&two).expect("a candidate is picked"), "b");
        assert_eq!(sw.pick(&two).expect("a candidate is picked"), "c");
        // a comes back fresh at 0 (its old -200 was dropped): a=100, b=200, c=200.
        assert_eq!(sw.pick(&three).expect("a candidate is picked"), "b");
        assert_eq!(sw.accumulators.get("a"), Some(&100));
    }
}
