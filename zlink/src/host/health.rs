//! [`Health`]: whether a node is alive and ready, with the checks that decided it, for
//! liveness and readiness probes (Kubernetes' `/alive` and `/ready`, a load balancer).

use serde::Serialize;

use super::status::{ClientServerStatus, FanoutStatus, RuntimeStatus};

/// A node's health at one moment: [`alive`](Self::alive), [`ready`](Self::ready), and
/// every check that went into readiness, passed or not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Health {
    /// The node runs: it has not stopped (a draining or shutting-down node is still
    /// alive; restarting it would only lose the work it is finishing).
    pub alive: bool,
    /// Every check passed: the node serves, its Location Store answers, its owner lease
    /// admits new work, and the mesh has what its channels and object types need.
    pub ready: bool,
    /// The checks, in a fixed order.
    pub checks: Vec<HealthCheck>,
}

/// One readiness check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HealthCheck {
    /// What it checks: `serving`, `store`, `lease`, `channels` or `object_types`.
    pub name: &'static str,
    /// Whether it passed.
    pub ok: bool,
    /// Why it did not, or what it saw (for an operator).
    pub detail: String,
}

/// The object types a node serves, as its configuration names them.
pub(crate) struct ServedTypes<'a> {
    pub(crate) spot_types: &'a [String],
    pub(crate) actor_types: &'a [String],
}

impl Health {
    /// The health `status` shows, for a node that serves `served`.
    pub(crate) fn of(status: &RuntimeStatus, stopped: bool, served: &ServedTypes<'_>) -> Health {
        let checks = vec![
            serving(status),
            store(status),
            lease(status),
            channels(status),
            object_types(status, served),
        ];
        let alive = !stopped;
        Health {
            alive,
            ready: alive && checks.iter().all(|c| c.ok),
            checks,
        }
    }

    /// The names of the checks that failed, in order (empty when the node is ready or
    /// only not alive).
    pub fn failed(&self) -> Vec<&'static str> {
        self.checks
            .iter()
            .filter(|c| !c.ok)
            .map(|c| c.name)
            .collect()
    }
}

fn check(name: &'static str, failures: Vec<String>, fine: &str) -> HealthCheck {
    HealthCheck {
        name,
        ok: failures.is_empty(),
        detail: if failures.is_empty() {
            fine.to_string()
        } else {
            failures.join("; ")
        },
    }
}

fn serving(status: &RuntimeStatus) -> HealthCheck {
    let mut failures = Vec::new();
    if !status.running {
        failures.push("the node is stopping: it admits no new calls".to_string());
    } else if status.draining {
        failures.push("the node is draining: it takes no new objects".to_string());
    }
    check("serving", failures, "serving")
}

fn store(status: &RuntimeStatus) -> HealthCheck {
    match &status.store {
        None => check("store", Vec::new(), "no Location Store configured"),
        Some(store) if !store.reachable => check(
            "store",
            vec!["the Location Store did not answer the last call".into()],
            "",
        ),
        Some(_) => check("store", Vec::new(), "the Location Store answers"),
    }
}

fn lease(status: &RuntimeStatus) -> HealthCheck {
    match &status.store {
        None => check(
            "lease",
            Vec::new(),
            "no owner lease without a Location Store",
        ),
        Some(store) if !store.lease_admits_new_work => check(
            "lease",
            vec![
                "the owner lease does not admit new work (not held, or too close to its expiry)"
                    .into(),
            ],
            "",
        ),
        Some(_) => check("lease", Vec::new(), "the owner lease admits new work"),
    }
}

fn channels(status: &RuntimeStatus) -> HealthCheck {
    let mut failures = Vec::new();
    for role in &status.client_server {
        if let ClientServerStatus::Client { channel, servers } = role {
            if servers.is_empty() {
                failures.push(format!(
                    "ClientServer channel {channel:?} has no ready server"
                ));
            }
        }
    }
    for role in &status.fanout {
        if let FanoutStatus::Subscriber {
            channel,
            publishers,
        } = role
        {
            if !publishers.iter().any(|p| p.ready) {
                failures.push(format!("fanout channel {channel:?} has no ready publisher"));
            }
        }
    }
    check(
        "channels",
        failures,
        "every channel this node uses has a ready peer",
    )
}

fn object_types(status: &RuntimeStatus, served: &ServedTypes<'_>) -> HealthCheck {
    let Some(placement) = &status.placement else {
        return check("object_types", Vec::new(), "no Spot or Actor types");
    };
    let mut failures = Vec::new();
    for stable_type in served.spot_types {
        if placement.spot_nodes(stable_type).is_empty() {
            failures.push(format!(
                "no ready node takes new Spots of type {stable_type:?}"
            ));
        }
    }
    for stable_type in served.actor_types {
        if placement.actor_nodes(stable_type).is_empty() {
            failures.push(format!(
                "no ready node takes new Actors of type {stable_type:?}"
            ));
        }
    }
    check(
        "object_types",
        failures,
        "every Spot and Actor type served here can be placed",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::status::{PlacementStatus, StoreStatus};
    use crate::object::creation::TypePlacement;

    fn status() -> RuntimeStatus {
        RuntimeStatus {
            rid: "a".into(),
            generation: 1,
            mesh_name: "m".into(),
            endpoint: String::new(),
            running: true,
            draining: false,
            served: Vec::new(),
            peers: Vec::new(),
            open_connections: 0,
            client_server: Vec::new(),
            fanout: Vec::new(),
            stream_listeners: Vec::new(),
            store: Some(StoreStatus {
                reachable: true,
                members: Vec::new(),
                last_complete_read_ms_ago: Some(1),
                grace_expired: false,
                published_revision: Some(1),
                lease_admits_new_work: true,
                lease_generation: Some(1),
            }),
            store_operations: None,
            spots_owned: 0,
            actors_owned: 0,
            placement: Some(PlacementStatus {
                spot_types: vec![TypePlacement {
                    stable_type: "room".into(),
                    ready_nodes: vec!["a".into()],
                }],
                actor_types: Vec::new(),
            }),
            entry_spot: None,
            lost_one_ways: Default::default(),
            relayed_by_message_follow: 0,
            multicast: Default::default(),
            route_cache: Default::default(),
        }
    }

    const NOTHING_SERVED: ServedTypes<'static> = ServedTypes {
        spot_types: &[],
        actor_types: &[],
    };

    #[test]
    fn a_serving_node_with_its_store_and_lease_is_alive_and_ready() {
        let served = ["room".to_string()];
        let health = Health::of(
            &status(),
            false,
            &ServedTypes {
                spot_types: &served,
                actor_types: &[],
            },
        );
        assert!(health.alive && health.ready, "{health:?}");
        assert_eq!(health.checks.len(), 5);
    }

    #[test]
    fn each_failed_condition_makes_the_node_unready_and_names_itself() {
        let mut draining = status();
        draining.draining = true;
        assert_eq!(
            Health::of(&draining, false, &NOTHING_SERVED).failed(),
            ["serving"]
        );

        let mut cut_off = status();
        if let Some(store) = &mut cut_off.store {
            store.reachable = false;
            store.lease_admits_new_work = false;
        }
        assert_eq!(
            Health::of(&cut_off, false, &NOTHING_SERVED).failed(),
            ["store", "lease"]
        );

        let mut lonely = status();
        lonely.client_server.push(ClientServerStatus::Client {
            channel: "billing".into(),
            servers: Vec::new(),
        });
        let health = Health::of(&lonely, false, &NOTHING_SERVED);
        assert_eq!(health.failed(), ["channels"]);
        assert!(
            health.checks[3].detail.contains("\"billing\""),
            "{health:?}"
        );

        let unplaceable = ["match".to_string()];
        let health = Health::of(
            &status(),
            false,
            &ServedTypes {
                spot_types: &unplaceable,
                actor_types: &[],
            },
        );
        assert_eq!(health.failed(), ["object_types"]);
        assert!(!health.ready && health.alive);
    }

    #[test]
    fn a_stopped_node_is_neither_alive_nor_ready() {
        let mut stopped = status();
        stopped.running = false;
        let health = Health::of(&stopped, true, &NOTHING_SERVED);
        assert!(!health.alive && !health.ready);
        let health = Health::of(&stopped, false, &NOTHING_SERVED);
        assert!(
            health.alive && !health.ready,
            "shutting down: alive, not ready"
        );
    }
}
