//! OTLP/gRPC: the collector's `TraceService` and `MetricsService` (tonic, from
//! opentelemetry-proto's generated servers).

use opentelemetry_proto::tonic::collector::metrics::v1::metrics_service_server::{
    MetricsService, MetricsServiceServer,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{ExportMetricsServiceRequest, ExportMetricsServiceResponse};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{TraceService, TraceServiceServer};
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use prost::Message as _;
use tokio::net::TcpListener;
use tonic::{Request, Response, Status};

use super::{Inbox, OtlpRequest, Transport};

pub(super) async fn serve(listener: TcpListener, inbox: Inbox) {
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    let _ = tonic::transport::Server::builder()
        .add_service(TraceServiceServer::new(inbox.clone()))
        .add_service(MetricsServiceServer::new(inbox))
        .serve_with_incoming(incoming)
        .await;
}

/// A request's metadata as lowercased header pairs (binary entries left out).
fn headers<T>(request: &Request<T>) -> Vec<(String, String)> {
    request
        .metadata()
        .clone()
        .into_headers()
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_ascii_lowercase(), v.to_str().ok()?.to_owned())))
        .collect()
}

impl Inbox {
    fn take_grpc(&self, signal: &'static str, headers: Vec<(String, String)>, body: Vec<u8>) -> Result<(), Status> {
        let request = OtlpRequest {
            transport: Transport::Grpc,
            signal,
            headers,
            body,
        };
        self.take(request).map_err(Status::invalid_argument)
    }
}

#[tonic::async_trait]
impl TraceService for Inbox {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        let headers = headers(&request);
        self.take_grpc("traces", headers, request.into_inner().encode_to_vec())?;
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}

#[tonic::async_trait]
impl MetricsService for Inbox {
    async fn export(
        &self,
        request: Request<ExportMetricsServiceRequest>,
    ) -> Result<Response<ExportMetricsServiceResponse>, Status> {
        let headers = headers(&request);
        self.take_grpc("metrics", headers, request.into_inner().encode_to_vec())?;
        Ok(Response::new(ExportMetricsServiceResponse::default()))
    }
}
