//! Placement: which Object Server a new Spot is created on (digest §2.1). The filters
//! run in order — the node serves the stable type, it is Serving with a valid lease (a
//! live member and a ready peer, or this node while its lease admits work), its placement
//! weight is above 0 — and the survivors are picked by weight.

/// One node a Spot could be created on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    /// The node's RID.
    pub(crate) rid: String,
    /// Its placement weight (1..=10000).
    pub(crate) weight: u32,
    /// Whether it is this node.
    pub(crate) local: bool,
}

/// Picks one candidate with probability proportional to its weight, leaving out the
/// nodes in `excluded` (targets that failed this call). `None` when nobody is left.
pub(crate) fn pick<'a>(candidates: &'a [Candidate], excluded: &[String]) -> Option<&'a Candidate> {
    let eligible: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.weight > 0 && !excluded.contains(&c.rid))
        .collect();
    let total: u64 = eligible.iter().map(|c| u64::from(c.weight)).sum();
    if total == 0 {
        return None;
    }
    let mut ticket = rand::random::<u64>() % total;
    for candidate in eligible {
        let weight = u64::from(candidate.weight);
        if ticket < weight {
            return Some(candidate);
        }
        ticket -= weight;
    }
    None
}

/// An Instance Spot's placement: the calling node itself when it is a candidate (it
/// serves the type, is not draining, its lease admits work, its weight is above 0) and
/// not `excluded` (it refused already, being full); otherwise [`pick`]. The first message
/// then runs where its caller is, with no hop.
pub(crate) fn prefer_local<'a>(
    candidates: &'a [Candidate],
    excluded: &[String],
) -> Option<&'a Candidate> {
    candidates
        .iter()
        .find(|c| c.local && c.weight > 0 && !excluded.contains(&c.rid))
        .or_else(|| pick(candidates, excluded))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(rid: &str, weight: u32) -> Candidate {
        Candidate {
            rid: rid.into(),
            weight,
            local: false,
        }
    }

    #[test]
    fn weight_zero_and_excluded_nodes_are_never_picked() {
        let nodes = [node("a", 0), node("b", 100), node("c", 100)];
        for _ in 0..200 {
            let picked = pick(&nodes, &["c".to_string()]).unwrap();
            assert_eq!(picked.rid, "b");
        }
        assert_eq!(pick(&nodes, &["b".into(), "c".into()]), None);
        assert_eq!(pick(&[], &[]), None);
    }

    #[test]
    fn the_calling_node_is_preferred_unless_it_is_excluded_or_weighs_zero() {
        let mut here = node("here", 1);
        here.local = true;
        let nodes = [node("a", 10000), here.clone(), node("b", 10000)];
        for _ in 0..100 {
            assert_eq!(prefer_local(&nodes, &[]).unwrap().rid, "here");
        }
        let other = prefer_local(&nodes, &["here".to_string()]).unwrap();
        assert_ne!(other.rid, "here");
        here.weight = 0;
        let drained = [node("a", 100), here];
        assert_eq!(prefer_local(&drained, &[]).unwrap().rid, "a");
    }

    #[test]
    fn picks_follow_the_weights() {
        let nodes = [node("light", 100), node("heavy", 300)];
        let heavy = (0..4000)
            .filter(|_| pick(&nodes, &[]).unwrap().rid == "heavy")
            .count();
        assert!((2700..3300).contains(&heavy), "{heavy} of 4000");
    }
}
