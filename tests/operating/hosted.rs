//! Which objects a node runs, as an operator lists them: from the node itself, a page at a
//! time, over real TCP and Redis.

use zlink_tests::relocating::mesh;
use zlink_tests::*;

/// The objects a node runs are listed page by page (Actors by ID, each with its
/// generation and type), the pages add up to every one of them once, a moved object is
/// listed where it runs now, and a node with none lists none.
#[tokio::test]
async fn a_node_lists_the_objects_it_runs_page_by_page_and_a_moved_one_where_it_runs_now() {
    let m = mesh(&["ho-a", "ho-b"], None).await;
    let (a, b, client) = (&m.nodes[0], &m.nodes[1], &m.nodes[2]);
    let mut made = Vec::new();
    for i in 0..5 {
        let actor = client
            .actors()
            .create(&format!("ho-{i}"), "counter")
            .await
            .unwrap();
        assert_eq!(actor.rid, "ho-a");
        made.push(actor);
    }
    let (mut listed, mut after) = (Vec::new(), None::<String>);
    let mut pages = 0;
    loop {
        let page = a.hosted_objects(after.as_deref(), 2).unwrap();
        assert!(page.objects.len() <= 2);
        listed.extend(page.objects);
        pages += 1;
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let ids: Vec<&str> = listed.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(ids, ["ho-0", "ho-1", "ho-2", "ho-3", "ho-4"]);
    for (object, actor) in listed.iter().zip(&made) {
        assert!(!object.is_spot);
        assert_eq!(object.generation, actor.generation);
        assert_eq!(object.stable_type, "counter");
    }
    assert!(b.hosted_objects(None, 10).unwrap().objects.is_empty());
    // The same over the dashboard's HTTP endpoint.
    let dashboard = zlink_dashboard::Dashboard::new(a.operator())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let page = http_get(dashboard.local_addr(), "/api/objects?limit=2").await;
    let page: serde_json::Value = serde_json::from_str(&page).expect("JSON");
    assert_eq!(page["objects"][0]["id"], "ho-0");
    assert_eq!(page["objects"].as_array().map(Vec::len), Some(2));
    let next = page["next"].as_str().expect("more pages");
    let rest = http_get(
        dashboard.local_addr(),
        &format!("/api/objects?after={next}"),
    )
    .await;
    let rest: serde_json::Value = serde_json::from_str(&rest).expect("JSON");
    assert_eq!(rest["objects"].as_array().map(Vec::len), Some(3));
    a.actors().relocate("ho-2", Some("ho-b")).await.unwrap();
    let on_b = b.operator().hosted_objects(None, 10).unwrap();
    assert_eq!(
        on_b.objects
            .iter()
            .map(|o| o.id.as_str())
            .collect::<Vec<_>>(),
        ["ho-2"]
    );
    assert_eq!(a.hosted_objects(None, 10).unwrap().objects.len(), 4);
    // A node without Spots or Actors says so.
    let plain = start(node("ho-plain")).await;
    let err = plain.hosted_objects(None, 10).unwrap_err();
    assert!(err.is(zlink::ErrorKind::NotConfigured), "{err}");
    plain.shutdown().await;
    stop(m.nodes).await;
}

/// The body of `GET path` on `addr`.
async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}
