//! Third-party clients: the standard health service and server reflection in both `v1` and
//! `v1alpha` (what grpcurl and python grpcio use) list grind's services.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_reflection_v1_and_v1alpha_answer() {
    let grind = Cluster::start(5_000, &[]).await;
    let channel = channel(&grind.coord.url).await;
    for service in ["grind.v1.Worker", "grind.v1.Admin"] {
        let status = health(channel.clone(), service).await.unwrap();
        assert_eq!(status, 1, "{service} is SERVING");
    }

    use tonic_reflection::pb::v1 as r1;
    let request = r1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(r1::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut stream = r1::server_reflection_client::ServerReflectionClient::new(channel.clone())
        .server_reflection_info(tokio_stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let reply = stream.message().await.unwrap().unwrap();
    let names: Vec<String> = match reply.message_response.unwrap() {
        r1::server_reflection_response::MessageResponse::ListServicesResponse(list) => {
            list.service.into_iter().map(|s| s.name).collect()
        }
        other => panic!("{other:?}"),
    };
    assert!(names.contains(&"grind.v1.Worker".to_string()), "{names:?}");
    assert!(names.contains(&"grind.v1.Admin".to_string()), "{names:?}");

    use tonic_reflection::pb::v1alpha as ra;
    let request = ra::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(ra::server_reflection_request::MessageRequest::ListServices(
            String::new(),
        )),
    };
    let mut stream = ra::server_reflection_client::ServerReflectionClient::new(channel)
        .server_reflection_info(tokio_stream::iter(vec![request]))
        .await
        .unwrap()
        .into_inner();
    let reply = stream.message().await.unwrap().unwrap();
    match reply.message_response.unwrap() {
        ra::server_reflection_response::MessageResponse::ListServicesResponse(list) => {
            assert!(list.service.iter().any(|s| s.name == "grind.v1.Admin"));
        }
        other => panic!("{other:?}"),
    }
}
