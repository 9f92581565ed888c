//! Mutual TLS end to end: real TLS handshakes with a CA and certificates generated here by
//! rcgen, first against `tls::serve` with a small echo router, then against the whole service
//! with authentication on (a mapped certificate's scopes authorize routes; no certificate and
//! no key is 401; a certificate from another CA never completes the handshake).

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::extract::{ConnectInfo, Extension};
use axum::routing::get;
use axum::{Json, Router};
use phiflow::tls::{CertPrincipal, ClientAuthMode, ClientIdentity, TlsServer, TlsSettings, serve};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// Unique scratch directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<Self> {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "tls-helper-test-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }

    fn write(&self, name: &str, contents: &str) -> std::io::Result<PathBuf> {
        let path = self.0.join(name);
        std::fs::write(&path, contents)?;
        Ok(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct ClientCert {
    /// Certificate + PKCS#8 key, the format `reqwest::Identity::from_pem` wants.
    identity_pem: String,
    der: Vec<u8>,
}

struct Pki {
    dir: TempDir,
    ca_pem: String,
    ca_path: PathBuf,
    cert_path: PathBuf,
    key_path: PathBuf,
    good: ClientCert,
    unknown: ClientCert,
}

fn new_ca(cn: &str) -> Result<CertifiedIssuer<'static, KeyPair>, rcgen::Error> {
    let mut params = CertificateParams::default();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate()?)
}

fn client_cert(
    cn: &str,
    dns_san: &str,
    issuer: &Issuer<'_, KeyPair>,
) -> Result<ClientCert, rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(vec![dns_san.to_owned()])?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    // Encoded O first, CN second, so RFC 4514 order is "CN=...,O=...".
    params
        .distinguished_name
        .push(DnType::OrganizationName, "Hospital");
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, issuer)?;
    Ok(ClientCert {
        identity_pem: format!("{}{}", cert.pem(), key.serialize_pem()),
        der: cert.der().to_vec(),
    })
}

fn make_pki() -> Result<Pki, Box<dyn std::error::Error + Send + Sync>> {
    let dir = TempDir::new()?;
    let ca = new_ca("Test Clinical CA")?;
    let other_ca = new_ca("Somebody Else CA")?;

    let server_key = KeyPair::generate()?;
    let mut server_params =
        CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])?;
    server_params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    server_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let server_cert = server_params.signed_by(&server_key, &ca)?;

    let good = client_cert("svc-analytics", "svc-analytics.hospital.internal", &ca)?;
    let unknown = client_cert(
        "svc-analytics",
        "svc-analytics.hospital.internal",
        &other_ca,
    )?;

    let ca_pem = ca.pem();
    Ok(Pki {
        ca_path: dir.write("ca.pem", &ca_pem)?,
        cert_path: dir.write("server.pem", &server_cert.pem())?,
        key_path: dir.write("server.key", &server_key.serialize_pem())?,
        ca_pem,
        good,
        unknown,
        dir,
    })
}

impl Pki {
    fn settings(&self, principals: Option<&str>, required: bool) -> TlsSettings {
        TlsSettings {
            cert_path: self.cert_path.clone(),
            key_path: self.key_path.clone(),
            client_ca_path: Some(self.ca_path.clone()),
            principals_json: principals.map(str::to_owned),
            client_cert_required: required,
        }
    }

    fn client(&self, cert: Option<&ClientCert>) -> reqwest::Result<reqwest::Client> {
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .tls_certs_only([reqwest::Certificate::from_pem(self.ca_pem.as_bytes())?]);
        if let Some(cert) = cert {
            builder = builder.identity(reqwest::Identity::from_pem(cert.identity_pem.as_bytes())?);
        }
        builder.build()
    }
}

/// Echoes what the TLS layer put into the request extensions.
async fn whoami(
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    principal: Option<Extension<CertPrincipal>>,
    identity: Option<Extension<Arc<ClientIdentity>>>,
) -> Json<Value> {
    let body = match (principal, identity) {
        (Some(Extension(p)), Some(Extension(id))) => json!({
            "principal": p.id,
            "scopes": p.scopes,
            "mapped": p.mapped,
            "fingerprint": id.fingerprint_sha256,
            "subject": id.subject,
            "sans": id.sans,
            "peer_ip": peer.ip().to_string(),
        }),
        _ => json!({ "principal": "none", "peer_ip": peer.ip().to_string() }),
    };
    Json(body)
}

fn app() -> Router {
    Router::new().route("/whoami", get(whoami)).route(
        "/slow",
        get(|| async {
            tokio::time::sleep(Duration::from_millis(600)).await;
            "slow done"
        }),
    )
}

struct Running {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    server: Arc<TlsServer>,
}

impl Running {
    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    async fn shutdown(mut self) -> TestResult {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(Duration::from_secs(5), self.task).await???;
        Ok(())
    }
}

async fn start(
    settings: &TlsSettings,
) -> Result<Running, Box<dyn std::error::Error + Send + Sync>> {
    let server = Arc::new(settings.build()?);
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let limits = phiflow::listen::Limits {
        header_read_timeout: Some(Duration::from_secs(10)),
        max_connections: Some(64),
        drain: Duration::from_secs(5),
    };
    let task = tokio::spawn(serve(
        listener,
        app(),
        Arc::clone(&server),
        limits,
        async move {
            let _ = rx.await;
        },
    ));
    Ok(Running {
        addr,
        stop: Some(tx),
        task,
        server,
    })
}

async fn get_json(
    client: &reqwest::Client,
    url: &str,
) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
    let resp = client.get(url).send().await?.error_for_status()?;
    Ok(serde_json::from_str(&resp.text().await?)?)
}

const BY_CN: &str = r#"[{"identity": "svc-analytics", "principal": "analytics",
                         "scopes": "notes:read deid:run"}]"#;

#[tokio::test]
async fn good_cert_mapped_by_cn() -> TestResult {
    let pki = make_pki()?;
    let srv = start(&pki.settings(Some(BY_CN), false)).await?;
    assert_eq!(srv.server.client_auth(), ClientAuthMode::Optional);
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics");
    assert_eq!(v["scopes"], json!(["notes:read", "deid:run"]));
    assert_eq!(v["mapped"], true);
    assert_eq!(v["subject"], "CN=svc-analytics,O=Hospital");
    assert_eq!(v["sans"], json!(["svc-analytics.hospital.internal"]));
    assert_eq!(v["peer_ip"], "127.0.0.1");
    srv.shutdown().await
}

#[tokio::test]
async fn good_cert_mapped_by_san_and_by_subject() -> TestResult {
    let pki = make_pki()?;
    let principals = r#"[
        {"identities": ["svc-analytics.hospital.internal"], "principal": "analytics-san",
         "scopes": ["notes:read"]},
        {"identity": "svc-other", "principal": "other"}
    ]"#;
    let srv = start(&pki.settings(Some(principals), false)).await?;
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics-san");
    assert_eq!(v["scopes"], json!(["notes:read"]));
    srv.shutdown().await?;

    let by_subject =
        r#"[{"identity": "CN=svc-analytics,O=Hospital", "principal": "analytics-dn"}]"#;
    let srv = start(&pki.settings(Some(by_subject), false)).await?;
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics-dn");
    assert_eq!(v["scopes"], json!([]));
    srv.shutdown().await
}

#[tokio::test]
async fn good_cert_unmapped_gets_fingerprint_id() -> TestResult {
    let pki = make_pki()?;
    let principals = r#"[{"identity": "svc-billing", "principal": "billing", "scopes": "x"}]"#;
    let srv = start(&pki.settings(Some(principals), false)).await?;
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    let fp = phiflow::digest::sha256_hex(&pki.good.der);
    assert_eq!(fp.len(), 64);
    assert_eq!(v["fingerprint"], fp.as_str());
    assert_eq!(v["principal"], format!("mtls:{fp}"));
    assert_eq!(v["scopes"], json!([]));
    assert_eq!(v["mapped"], false);
    srv.shutdown().await
}

#[tokio::test]
async fn unknown_ca_cert_is_refused() -> TestResult {
    let pki = make_pki()?;
    let srv = start(&pki.settings(Some(BY_CN), false)).await?;
    let result = pki
        .client(Some(&pki.unknown))?
        .get(srv.url("/whoami"))
        .send()
        .await;
    let err = result.err().ok_or("unknown-CA client must not be served")?;
    assert!(format!("{err:?}").contains("UnknownCA"), "{err:?}");
    // The failure is contained to that connection.
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics");
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(srv.server.handshake_failures() >= 1);
    srv.shutdown().await
}

#[tokio::test]
async fn no_cert_is_served_without_identity_when_optional() -> TestResult {
    let pki = make_pki()?;
    let srv = start(&pki.settings(Some(BY_CN), false)).await?;
    let v = get_json(&pki.client(None)?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "none");
    assert_eq!(v["peer_ip"], "127.0.0.1");
    srv.shutdown().await
}

#[tokio::test]
async fn no_cert_is_refused_when_required() -> TestResult {
    let pki = make_pki()?;
    let srv = start(&pki.settings(Some(BY_CN), true)).await?;
    assert_eq!(srv.server.client_auth(), ClientAuthMode::Required);
    let result = pki.client(None)?.get(srv.url("/whoami")).send().await;
    let err = result
        .err()
        .ok_or("certificate-less client must be refused")?;
    assert!(
        format!("{err:?}").contains("CertificateRequired"),
        "{err:?}"
    );
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics");
    srv.shutdown().await
}

#[tokio::test]
async fn without_ca_no_cert_is_requested() -> TestResult {
    let pki = make_pki()?;
    let settings = TlsSettings {
        client_ca_path: None,
        ..pki.settings(None, false)
    };
    let srv = start(&settings).await?;
    assert_eq!(srv.server.client_auth(), ClientAuthMode::Disabled);
    // A client cert offered anyway is simply not asked for, so no identity.
    let v = get_json(&pki.client(Some(&pki.good))?, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "none");
    srv.shutdown().await
}

#[tokio::test]
async fn garbage_and_silent_peers_do_not_block_others_or_shutdown() -> TestResult {
    let pki = make_pki()?;
    let srv = start(&pki.settings(Some(BY_CN), false)).await?;
    let mut garbage = tokio::net::TcpStream::connect(srv.addr).await?;
    garbage
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    // Never sends anything: sits in the handshake until shutdown.
    let _silent = tokio::net::TcpStream::connect(srv.addr).await?;
    // Kept alive so its pooled keep-alive connection is still open at shutdown.
    let client = pki.client(Some(&pki.good))?;
    let v = get_json(&client, &srv.url("/whoami")).await?;
    assert_eq!(v["principal"], "analytics");
    let started = std::time::Instant::now();
    srv.shutdown().await?;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "silent peer delayed shutdown"
    );
    Ok(())
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_requests() -> TestResult {
    let pki = make_pki()?;
    let mut srv = start(&pki.settings(Some(BY_CN), false)).await?;
    let client = pki.client(Some(&pki.good))?;
    let url = srv.url("/slow");
    let in_flight = tokio::spawn(async move { client.get(url).send().await?.text().await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    if let Some(stop) = srv.stop.take() {
        let _ = stop.send(());
    }
    assert_eq!(in_flight.await??, "slow done");
    tokio::time::timeout(Duration::from_secs(5), &mut srv.task).await???;
    // The listener is gone: new connections are refused.
    assert!(tokio::net::TcpStream::connect(srv.addr).await.is_err());
    Ok(())
}

#[tokio::test]
async fn build_errors_name_the_file_and_hide_key_bytes() -> TestResult {
    let pki = make_pki()?;
    // Missing CA bundle.
    let mut settings = pki.settings(None, false);
    settings.client_ca_path = Some(pki.dir.0.join("missing-ca.pem"));
    let msg = settings.build().expect_err("missing CA").to_string();
    assert!(
        msg.contains("missing-ca.pem") && msg.contains("client CA bundle"),
        "{msg}"
    );

    // Key file that is not PEM at all (pretend the bytes are secret).
    let bad_key = pki.dir.write(
        "bad.key",
        "-----BEGIN PRIVATE KEY-----\nS3CR3T!!\n-----END PRIVATE KEY-----\n",
    )?;
    let mut settings = pki.settings(None, false);
    settings.key_path = bad_key;
    let msg = settings.build().expect_err("bad key").to_string();
    assert!(msg.contains("bad.key"), "{msg}");
    assert!(!msg.contains("S3CR3T"), "{msg}");

    // Key that does not belong to the certificate.
    let other_key = pki
        .dir
        .write("other.key", &KeyPair::generate()?.serialize_pem())?;
    let mut settings = pki.settings(None, false);
    settings.key_path = other_key;
    let msg = settings.build().expect_err("mismatched key").to_string();
    assert!(
        msg.contains("other.key") && msg.contains("server.pem"),
        "{msg}"
    );

    // Certificate file with no certificates.
    let empty = pki.dir.write("empty.pem", "")?;
    let mut settings = pki.settings(None, false);
    settings.cert_path = empty;
    let msg = settings.build().expect_err("empty chain").to_string();
    assert!(
        msg.contains("empty.pem") && msg.contains("no CERTIFICATE"),
        "{msg}"
    );

    // Duplicate identities across entries.
    let dup = r#"[{"identity":"svc-a","principal":"a"},{"identities":["svc-a"],"principal":"b"}]"#;
    let msg = pki
        .settings(Some(dup), false)
        .build()
        .expect_err("dup")
        .to_string();
    assert!(
        msg.contains("SERVICE_MTLS_PRINCIPALS") && msg.contains("svc-a"),
        "{msg}"
    );
    Ok(())
}

#[test]
fn identity_from_der_reads_subject_and_sans() -> TestResult {
    let pki = make_pki()?;
    let id = ClientIdentity::from_der(&pki.good.der);
    assert_eq!(id.subject, "CN=svc-analytics,O=Hospital");
    assert_eq!(id.common_names(), vec!["svc-analytics".to_owned()]);
    assert_eq!(id.sans, vec!["svc-analytics.hospital.internal".to_owned()]);
    assert_eq!(
        id.fingerprint_sha256,
        phiflow::digest::sha256_hex(&pki.good.der)
    );
    Ok(())
}

#[test]
fn identity_handles_ip_uri_email_sans_and_escaping() -> TestResult {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, "St. Mary's, Inc.");
    params.distinguished_name.push(DnType::CommonName, " svc+x");
    params.subject_alt_names = vec![
        rcgen::SanType::IpAddress("10.1.2.3".parse()?),
        rcgen::SanType::IpAddress("fd00::1".parse()?),
        rcgen::SanType::URI("spiffe://hospital/ns/a/sa/b".try_into()?),
        rcgen::SanType::Rfc822Name("ops@hospital.example".try_into()?),
    ];
    let cert = params.self_signed(&key)?;
    let id = ClientIdentity::from_der(cert.der());
    assert_eq!(id.subject, "CN=\\ svc\\+x,O=St. Mary's\\, Inc.");
    assert_eq!(id.common_names(), vec![" svc+x".to_owned()]);
    assert_eq!(
        id.sans,
        vec![
            "10.1.2.3".to_owned(),
            "fd00::1".to_owned(),
            "spiffe://hospital/ns/a/sa/b".to_owned(),
            "ops@hospital.example".to_owned(),
        ]
    );
    Ok(())
}

/// The whole service over HTTPS with auth on: the certificate `svc-analytics` maps to
/// `models:read`, and one API key (`pii:read`) works without a certificate.
#[test]
fn service_authorizes_by_client_certificate() -> TestResult {
    let pki = make_pki()?;
    let key = "mtls-test-key-6b1f0d";
    let digest = phiflow::digest::sha256_hex(key.as_bytes());
    let (cert, tls_key, ca) = (
        pki.cert_path.clone(),
        pki.key_path.clone(),
        pki.ca_path.clone(),
    );
    let server = common::start_unready(move |s| {
        // No model is needed, and one still loading when the test binary exits crashes the
        // ONNX Runtime teardown (SIGSEGV after every test passed).
        s.preload_models = Some(vec![]);
        s.tls.cert = Some(cert.display().to_string());
        s.tls.key = Some(tls_key.display().to_string());
        s.tls.mtls_ca_bundle = Some(ca.display().to_string());
        s.tls.mtls_principals = Some(
            r#"[{"identities":["svc-analytics"],"principal":"analytics","scopes":["models:read"]}]"#
                .into(),
        );
        s.auth.enabled = Some("true".into());
        s.auth.api_keys = Some(format!(
            r#"[{{"id":"k1","key_hash":"sha256:{digest}","scopes":["pii:read"]}}]"#
        ));
    });
    let base = server.base.replace("http://", "https://");
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let good = pki.client(Some(&pki.good))?;
        let none = pki.client(None)?;
        let unknown = pki.client(Some(&pki.unknown))?;
        // Probes are exempt; this also waits for the listener.
        let mut ready = false;
        for _ in 0..600 {
            if let Ok(r) = none.get(format!("{base}/livez")).send().await {
                ready = r.status() == 200;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ready, "HTTPS service never answered");

        let r = good.get(format!("{base}/models/loaded")).send().await?;
        assert_eq!(r.status(), 200, "mapped certificate with models:read");
        let r = good
            .post(format!("{base}/pii/extract"))
            .json(&json!({}))
            .send()
            .await?;
        assert_eq!(r.status(), 403, "mapped certificate lacks pii:read");
        let body: Value = r.json().await?;
        assert_eq!(
            body["error"]["details"]["required_scopes"],
            json!(["pii:read"])
        );

        let r = none.get(format!("{base}/models/loaded")).send().await?;
        assert_eq!(r.status(), 401, "no certificate and no credential");
        assert_eq!(r.headers()["www-authenticate"], "Bearer, ApiKey");
        let r = none
            .post(format!("{base}/pii/extract"))
            .header("X-API-Key", key)
            .json(&json!({}))
            .send()
            .await?;
        assert_eq!(
            r.status(),
            422,
            "the API key passes auth without a certificate"
        );

        assert!(
            unknown.get(format!("{base}/livez")).send().await.is_err(),
            "a certificate from another CA must fail the handshake"
        );
        Ok(())
    })
}
