//! Explicit recovery after a crash (seed 002 §4.4's failover contract, DESIGN §9b): a
//! dead owner's objects are reclaimed only once its lease expired, under a fence, and never
//! produce two live incarnations.

use std::sync::Arc;
use std::time::Duration;

use zlink::object::recovery::{ReclaimRefusal, RecordState};
use zlink::object::ActorCreation;
use zlink::store::LocationStore;
use zlink_testkit::{wait_until, FaultyLocationStore, RedisServer};
use zlink_tests::restarts::*;
use zlink_tests::{discovered_node, quick_lease, start, WAIT};

async fn tally_by(rt: &zlink::Handle, id: &str) -> zlink::Result<Tallied> {
    TallierClient::new(rt, id).tally(Tally(1)).await
}

/// The partition test. Node a owns five tallies (one with a running timer) and is cut off
/// from the Location Store while it stays alive and connected to its peers. A reclaim is
/// refused while a's lease lives, and releases everything once it expired; the IDs are
/// created anew on b. Then the partition heals and a claims a new lease: none of its old
/// incarnations answers a message (sent from a, b and the gateway), and its timer never
/// ticks again. Each ID has exactly one live incarnation throughout.
#[tokio::test]
async fn a_partitioned_owner_whose_objects_were_reclaimed_never_runs_them_again() {
    let redis = RedisServer::start().expect("redis-server");
    let (store, roots) = redis_stores(&redis.url());
    let faulty = Arc::new(FaultyLocationStore::new(store.clone()));
    let a_store: Arc<dyn LocationStore> = faulty.clone();
    let a_counts = Counts::default();
    let probe = zlink_tests::instance_races::Probe::new(Duration::ZERO, false);
    let a = player_node("a", &a_store, &roots, &probe, &a_counts).await;
    let gateway =
        start(discovered_node("gateway", &store, quick_lease()).relocation_store(roots.clone()))
            .await;
    gateway.actors().ready("tally", 1).await.unwrap();
    let ids: Vec<String> = (0..5).map(|i| format!("x{i}")).collect();
    for id in &ids {
        let actor = gateway.actors().create(id, "tally").await.unwrap();
        assert_eq!(actor.rid, "a");
        assert_eq!(tally_by(&gateway, id).await.unwrap().by, "a");
    }
    TallierClient::new(&gateway, "x0")
        .beat(&Beat)
        .await
        .unwrap();
    wait_until(WAIT, "the timer ticks on a", || async {
        a_counts.ticks() > 3
    })
    .await;
    let b = player_node("b", &store, &roots, &probe, &Counts::default()).await;
    gateway.actors().ready("tally", 2).await.unwrap();

    let old_lease = lease_of(&a);
    faulty.set_down(true);
    let recovery = gateway.objects().unwrap();
    let early = recovery.reclaim_actor("x1").await.unwrap();
    assert!(early.released.is_empty());
    assert!(
        matches!(early.refused[0].reason, ReclaimRefusal::LeaseLive { .. }),
        "refused while the lease lives: {early:?}"
    );
    lease_expired(&store, &old_lease).await;
    // a stopped admitting a fencing margin before the store expired its lease.
    let ticks_at_expiry = a_counts.ticks();
    // The reclaim is counted and told, on the node that ran it.
    let scrape = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .expect("this test binary's one recorder");
    let mut told = gateway.observe();
    let report = recovery.reclaim_node("a").await.unwrap();
    let reclaimed = told.try_next().expect("the reclaim was told");
    assert_eq!(
        reclaimed.event.what,
        zlink::telemetry::Happened::ObjectsReclaimed {
            owner: Some("a".into()),
            released: report.released.len(),
            refused: 0,
        }
    );
    let counted = format!(
        "zlink_object_reclaims_total{{mesh=\"{}\",rid=\"gateway\",outcome=\"released\"}} {}",
        gateway.status().mesh_name,
        report.released.len()
    );
    assert!(
        scrape.render().contains(&counted),
        "{counted} in {}",
        scrape.render()
    );
    let mut released: Vec<_> = report
        .released
        .iter()
        .filter(|r| !r.is_spot)
        .map(|r| r.id.clone())
        .collect();
    released.sort();
    assert_eq!(released, ids, "every Actor of a released: {report:?}");
    assert!(report.refused.is_empty(), "{report:?}");
    assert!(report
        .released
        .iter()
        .all(|r| r.state == RecordState::Ready));

    let mut generations = Vec::new();
    for id in &ids {
        let created = gateway.actors().get_or_create(id, "tally").await.unwrap();
        let ActorCreation::Created(actor) = created else {
            panic!("{id}: created anew after the reclaim, got {created:?}")
        };
        assert_eq!(actor.rid, "b");
        generations.push(actor.generation);
    }
    faulty.set_down(false);
    wait_until(WAIT, "a holds a new lease", || async {
        a.discovery()
            .owner_lease()
            .and_then(|lease| lease.token)
            .is_some_and(|token| token.generation != old_lease.generation)
    })
    .await;
    // b joined while a was cut off from the store: a learns of it now.
    wait_until(WAIT, "a discovers b", || async {
        zlink_tests::peer_rids(&a).contains(&"b".to_string())
    })
    .await;
    for caller in [&a, &b, &gateway] {
        for (id, generation) in ids.iter().zip(&generations) {
            let answer = tally_by(caller, id).await.unwrap();
            assert_eq!(
                (answer.by.as_str(), answer.generation),
                ("b", *generation),
                "{id} from {}: only the new incarnation answers",
                caller.rid()
            );
        }
    }
    // A window of 50 ticks' time: the old incarnation's timer stays silent.
    let quiet = tokio::time::timeout(
        Duration::from_secs(1),
        wait_until(WAIT, "a's old timer ticks", || async {
            a_counts.ticks() > ticks_at_expiry
        }),
    )
    .await;
    assert!(
        quiet.is_err(),
        "a's old incarnation ticked after its lease expired"
    );
    for rt in [gateway, b, a] {
        rt.shutdown().await;
    }
}

/// Three nodes race to reach the same 100 Actors and 30 Instance Spots of a crashed
/// node, of types declared `on_owner_lost = reclaim`: `get_or_create` and intent calls
/// reclaim under the fence, and each ID ends with exactly one new incarnation and one
/// factory run.
#[tokio::test]
async fn three_nodes_racing_to_reclaim_the_same_dead_objects_make_one_incarnation_each() {
    let redis = RedisServer::start().expect("redis-server");
    let (store, roots) = redis_stores(&redis.url());
    let dead_counts = Counts::default();
    let dead = phoenix_node("dead", &store, &roots, &dead_counts).await;
    let actors: Vec<String> = (0..100).map(|i| format!("ph{i}")).collect();
    let spots: Vec<String> = (0..30).map(|i| format!("bc{i}")).collect();
    for id in &actors {
        dead.actors().create(id, "phoenix").await.unwrap();
    }
    for id in &spots {
        BeaconClient::instance(&dead, id)
            .tally(Tally(1))
            .await
            .unwrap();
    }
    let lease = lease_of(&dead);
    let counts = Counts::default();
    let mut racers = Vec::new();
    for rid in ["r1", "r2", "r3"] {
        racers.push(phoenix_node(rid, &store, &roots, &counts).await);
    }
    dead.crash().await;
    lease_expired(&store, &lease).await;
    for racer in &racers {
        racer.actors().ready("phoenix", 3).await.unwrap();
    }
    let mut tasks = Vec::new();
    for racer in &racers {
        for id in &actors {
            let (racer, id) = (racer.handle().clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                let created = racer.actors().get_or_create(&id, "phoenix").await;
                (
                    id,
                    matches!(created, Ok(ActorCreation::Created(_))),
                    created.err(),
                )
            }));
        }
        for id in &spots {
            let (racer, id) = (racer.handle().clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                let answer = BeaconClient::instance(&racer, &id).tally(Tally(1)).await;
                (id, false, answer.err())
            }));
        }
    }
    let mut created = std::collections::HashMap::<String, usize>::new();
    for task in tasks {
        let (id, new, error) = task.await.unwrap();
        assert!(error.is_none(), "{id}: {error:?}");
        *created.entry(id).or_default() += usize::from(new);
    }
    for id in &actors {
        assert_eq!(created[id], 1, "{id}: exactly one caller created it");
        let found = racers[0].actors().find(id).await.unwrap().expect("Ready");
        assert!(["r1", "r2", "r3"].contains(&found.rid.as_str()));
    }
    for id in &spots {
        let answer = BeaconClient::instance(&racers[0], id)
            .tally(Tally(0))
            .await
            .unwrap();
        assert_eq!(
            answer.total, 3,
            "{id}: one incarnation took all three racers' calls"
        );
    }
    assert_eq!(
        counts.built(),
        actors.len() + spots.len(),
        "one factory run per ID"
    );
    for racer in racers {
        racer.shutdown().await;
    }
}
