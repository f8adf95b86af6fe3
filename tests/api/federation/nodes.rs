//! Several nodes on PostgreSQL: the sign-in parked at one node for the upstream
//! comes back to another, which finishes it.

use super::*;

#[tokio::test]
async fn an_upstream_may_send_the_browser_back_to_another_node() {
    let Some(url) = required_cluster("multi-node") else {
        return;
    };
    let mut up = spawn_with(|s| s.listen = "127.0.0.2:0".parse().unwrap()).await;
    up.address = up.state.issuer.to_string();
    let nodes = spawn_nodes(&url, 2).await;
    let secret = up
        .add_client_with("cluster", false, |c| {
            c.redirect_uris = vec!["http://id.test/federation/up/callback".into()];
        })
        .await
        .unwrap();
    let spec = ProviderSpec {
        id: "up".into(),
        kind: "oidc".into(),
        issuer: Some(up.address.clone()),
        client_id: "cluster".into(),
        client_secret: secret,
        jit: true,
        ..ProviderSpec::default()
    };
    register(&nodes[0], &spec).await;
    let rp_secret = nodes[0].add_client(RP, false).await.unwrap();
    up.add_user("nora").await;

    let b = browser();
    let resp = b
        .get(nodes[0].authorize_url(RP, &[("idp", "up")]))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 303);
    let fields = up.open_login(&b, &location(&resp)).await;
    let resp = up.submit_login(&b, fields, "nora", PASSWORD).await;
    let back = location(&resp);
    let rest = back
        .strip_prefix("http://id.test")
        .unwrap_or_else(|| panic!("the callback is on the issuer: {back}"));
    // The load balancer picks the other node.
    let resp = b.get(format!("{}{rest}", nodes[1].address)).send().await.unwrap();
    assert_eq!(resp.status(), 303, "{}", resp.text().await.unwrap());
    let params = redirect_params(&resp);
    let tokens = nodes[0].exchange(RP, &rp_secret, &params["code"]).await;
    let claims = jwt_parts(tokens["id_token"].as_str().unwrap()).1;
    assert_eq!(claims["preferred_username"], "nora");
    assert_eq!(claims["amr"], serde_json::json!(["pwd", "fed"]));
}
