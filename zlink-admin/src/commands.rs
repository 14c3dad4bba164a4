//! Each subcommand: one call on [`Objects`], printed as text or JSON.

use serde::Serialize;
use zlink::object::recovery::{
    LeaseHealth, NodeRecord, ObjectRecord, Objects, OwnedPage, ReclaimRefusal, ReclaimReport,
};

use crate::cli::Command;

/// How a command ended, when it did not fail.
pub enum Done {
    /// Everything asked for was done (or there was nothing to do).
    Clean,
    /// A reclaim refused something; the reasons were printed.
    SomethingRefused,
}

/// Runs `command` over `objects`, printing its result.
pub async fn run(objects: &Objects, command: Command, json: bool) -> zlink::Result<Done> {
    match command {
        Command::Nodes { mesh } => {
            let nodes = objects.nodes(&mesh).await?;
            print(json, &nodes, || nodes_text(&mesh, &nodes));
        }
        Command::Where { id } => {
            let found = objects.locate(&id).await?;
            print(json, &found, || where_text(&id, &found));
        }
        Command::Objects { node, cursor, all } => {
            let page = owned(objects, &node, cursor, all).await?;
            print(json, &page, || owned_text(&node, &page));
        }
        Command::Reclaim { id, node } => {
            let report = match (id, node) {
                (_, Some(rid)) => objects.reclaim_node(&rid).await?,
                (Some(id), None) => objects.reclaim(&id).await?,
                (None, None) => {
                    return Err(zlink::Error::InvalidArgument(
                        "reclaim what? an ID or --node RID".into(),
                    ))
                }
            };
            print(json, &report, || reclaim_text(&report));
            // An ID that is Missing already needs nothing: only a refusal that leaves an
            // object in place is one.
            if report
                .refused
                .iter()
                .any(|r| r.reason != ReclaimRefusal::AlreadyMissing)
            {
                return Ok(Done::SomethingRefused);
            }
        }
    }
    Ok(Done::Clean)
}

/// One page, or with `all` every page as one.
async fn owned(
    objects: &Objects,
    node: &str,
    cursor: Option<String>,
    all: bool,
) -> zlink::Result<OwnedPage> {
    let mut page = objects.owned_by(node, cursor.as_deref()).await?;
    if !all {
        return Ok(page);
    }
    while let Some(next) = page.next.take() {
        let more = objects.owned_by(node, Some(&next)).await?;
        page.objects.extend(more.objects);
        page.next = more.next;
    }
    Ok(page)
}

fn print<T: Serialize>(json: bool, value: &T, text: impl FnOnce() -> String) {
    if json {
        match serde_json::to_string_pretty(value) {
            Ok(document) => println!("{document}"),
            Err(e) => eprintln!("zlink-admin: cannot print JSON: {e}"),
        }
    } else {
        print!("{}", text());
    }
}

fn lease_text(lease: &LeaseHealth) -> String {
    match lease {
        LeaseHealth::Live { remaining_ms } => format!("live ({remaining_ms} ms left)"),
        LeaseHealth::Expired => "expired".to_string(),
        _ => "unknown".to_string(),
    }
}

fn nodes_text(mesh: &str, nodes: &[NodeRecord]) -> String {
    if nodes.is_empty() {
        return format!("no node of mesh {mesh:?} has a descriptor in the store\n");
    }
    let mut out = String::from("RID\tGENERATION\tENDPOINT\tLEASE\tDRAINING\n");
    for node in nodes {
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            node.rid,
            node.generation,
            node.endpoint,
            if node.lease_live { "live" } else { "expired" },
            if node.draining { "yes" } else { "no" },
        ));
    }
    out
}

fn object_line(record: &ObjectRecord) -> String {
    format!(
        "{} {}\t{}\t{:?}\tgeneration {}\ton {} (lifecycle {})\tlease {}\n",
        if record.is_spot { "Spot" } else { "Actor" },
        record.id,
        record.stable_type,
        record.state,
        record.generation,
        record.rid,
        record.node_generation,
        lease_text(&record.owner_lease),
    )
}

fn where_text(id: &str, found: &[ObjectRecord]) -> String {
    if found.is_empty() {
        return format!(
            "{id}: Missing (no Spot or Actor has this ID; the next create makes one)\n"
        );
    }
    found.iter().map(object_line).collect()
}

fn owned_text(node: &str, page: &OwnedPage) -> String {
    let mut out: String = page.objects.iter().map(object_line).collect();
    if page.objects.is_empty() {
        out.push_str(&format!("no object on this page names node {node}\n"));
    }
    if let Some(next) = &page.next {
        out.push_str(&format!("more: --cursor {next}\n"));
    }
    out
}

fn reclaim_text(report: &ReclaimReport) -> String {
    let mut out = String::new();
    for record in &report.released {
        out.push_str(&format!("released {}", object_line(record)));
    }
    for refused in &report.refused {
        let noun = if refused.is_spot { "Spot" } else { "Actor" };
        let why = match &refused.reason {
            ReclaimRefusal::AlreadyMissing => "already Missing: nothing to reclaim".to_string(),
            ReclaimRefusal::LeaseLive { remaining_ms } => format!(
                "refused: its owner's lease is live for {remaining_ms} ms more; stop the owner or wait for the lease to expire"
            ),
            ReclaimRefusal::Changed => "refused: the record changed meanwhile; read it again".to_string(),
            ReclaimRefusal::Failed { detail } => format!("not reclaimed, the store failed: {detail}; try again"),
            _ => "refused".to_string(),
        };
        out.push_str(&format!("{noun} {}: {why}\n", refused.id));
    }
    if report.released.is_empty() && report.refused.is_empty() {
        out.push_str("nothing to reclaim\n");
    }
    out
}
