//! The decision contract end to end: REST (`/v1/decisions`, `/batch`) on a real server, the
//! typed client, the library call, the MCP tool over stdio (`phiflow mcp`, spoken to with raw
//! JSON-RPC lines), and the encoder backend with the real all-MiniLM-L6-v2 model.

mod common;

use std::process::Stdio;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use phiflow::config::{DecisionBackend, Settings};
use phiflow::decisions::client::{ClientError, DecisionClient, DecisionInput};
use phiflow::decisions::{Mode, decide_value, fixtures, setup};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

const SECRET: &str = "MRN-4471-SECRET";

fn encoder_server() -> &'static common::Server {
    static SERVER: OnceLock<common::Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        common::start(|s: &mut Settings| s.decisions.decision_backend = DecisionBackend::Encoder)
    })
}

async fn decide(server: &common::Server, body: Value) -> Value {
    let (status, v) = server.post("/v1/decisions", &body).await;
    assert_eq!(status, 200, "{v}");
    v
}

/// What every result promises, whatever its state.
fn check_invariants(r: &Value, input_text: &str) {
    assert_eq!(r["autonomous_action"], false);
    assert_eq!(r["review"]["required"], true);
    assert_eq!(r["schema_version"], "1.0.0");
    assert_eq!(r["compatibility_policy"], "same_major");
    assert!(r["extensions"].is_object());
    assert!(
        r["warnings"]
            .as_array()
            .is_some_and(|w| w.contains(&json!("human_review_required")))
    );
    for k in [
        "calibration_id",
        "version",
        "method",
        "in_domain_digest",
        "out_of_domain_digest",
    ] {
        assert!(r["calibration"][k].is_string(), "calibration.{k}: {r}");
    }
    for k in [
        "backend_id",
        "kind",
        "runtime",
        "model_id",
        "revision",
        "license_id",
    ] {
        assert!(r["backend"][k].is_string(), "backend.{k}: {r}");
    }
    assert!(r["access"]["allowed"].is_boolean());
    if r["state"] == "success" {
        assert!(r["code"].is_null());
    } else {
        assert!(r["code"].is_string(), "{r}");
        assert!(r["choice"].is_null() && r["scalar_score"].is_null(), "{r}");
        assert_eq!(r["choices"], json!([]), "{r}");
    }
    assert!(
        !r.to_string().contains(input_text),
        "input text echoed: {r}"
    );
}

#[tokio::test]
async fn every_mode_and_state_over_http() {
    let server = common::server();
    let text = format!("Patient {SECRET} reports chest pain radiating to the left arm.");
    let cases = [
        // (request, state, code, choice)
        (
            json!({"mode": "fixed_choice", "input_text": text, "options": ["chest pain", "headache", "rash"]}),
            "success",
            None,
            Some("chest pain"),
        ),
        (
            json!({"mode": "boolean_choice", "input_text": "Discharge to home today.", "options": ["discharge to home", "admit"]}),
            "success",
            None,
            Some("discharge to home"),
        ),
        (
            json!({"mode": "ordered_preference", "input_text": text, "options": ["rash", "chest pain", "left arm pain"]}),
            "success",
            None,
            Some("chest pain"),
        ),
        (
            json!({"mode": "multi_label", "input_text": "Cough and fever since Monday.", "options": ["cough", "fever", "rash"]}),
            "success",
            None,
            Some("cough"),
        ),
        (
            json!({"mode": "scalar_score", "input_text": "Pain relief rated 0.8 by the patient."}),
            "success",
            None,
            None,
        ),
        (
            json!({"mode": "fixed_choice", "input_text": "The weather was pleasant.", "options": ["chest pain", "headache"]}),
            "abstained",
            Some("low_confidence"),
            None,
        ),
        (
            json!({"mode": "fixed_choice", "input_text": "Reports chest pain and headache.", "options": ["chest pain", "headache"]}),
            "abstained",
            Some("ambiguous_scores"),
            None,
        ),
        (
            json!({"mode": "multi_label", "input_text": "The weather was pleasant.", "options": ["cough", "fever"]}),
            "abstained",
            Some("no_label_above_threshold"),
            None,
        ),
        (
            json!({"mode": "fixed_choice", "input_text": text, "options": ["a", "b"], "calibration_id": "no.such.profile"}),
            "unsupported",
            Some("calibration_unavailable"),
            None,
        ),
        (
            json!({"mode": "scalar_score", "input_text": "Scores 0.2 and 0.9 were both recorded."}),
            "unsupported",
            Some("backend_unsupported"),
            None,
        ),
        (
            json!({"mode": "fixed_choice", "input_text": text, "options": ["a", "b"], "namespace": "other_tenant"}),
            "denied",
            Some("namespace_denied"),
            None,
        ),
        (
            json!({"mode": "fixed_choice", "input_text": text, "options": ["a", "b"], "purpose": "marketing"}),
            "denied",
            Some("purpose_denied"),
            None,
        ),
    ];
    for (body, state, code, choice) in cases {
        let r = decide(server, body.clone()).await;
        assert_eq!(r["state"], state, "{body} → {r}");
        assert_eq!(r["code"].as_str(), code, "{body} → {r}");
        assert_eq!(r["choice"].as_str(), choice, "{body} → {r}");
        assert_eq!(r["mode"], body["mode"]);
        check_invariants(&r, body["input_text"].as_str().unwrap_or_default());
    }
    // The shapes per mode.
    let r = decide(
        server,
        json!({"mode": "multi_label", "input_text": "Cough and fever since Monday.",
        "options": ["cough", "fever", "rash"]}),
    )
    .await;
    assert_eq!(r["choices"], json!(["cough", "fever"]));
    assert_eq!(r["option_scores"].as_array().map(Vec::len), Some(3));
    let r = decide(
        server,
        json!({"mode": "ordered_preference", "input_text": text,
        "options": ["rash", "chest pain", "left arm pain"]}),
    )
    .await;
    assert_eq!(r["ranking"][0], 1);
    assert_eq!(r["ranking"].as_array().map(Vec::len), Some(3));
    let r = decide(
        server,
        json!({"mode": "scalar_score", "input_text": "Pain relief rated 0.8."}),
    )
    .await;
    assert_eq!(r["scalar_score"], 0.8);
    assert_eq!(r["option_scores"], json!([]));
    // Abstained results keep the scores a reviewer needs, never a choice.
    let r = decide(
        server,
        json!({"mode": "fixed_choice", "input_text": "Reports chest pain and headache.",
        "options": ["chest pain", "headache"]}),
    )
    .await;
    assert_eq!(r["margin"], 0.0);
    assert_eq!(r["option_scores"].as_array().map(Vec::len), Some(2));

    let (_, metrics) = {
        let r = common::client()
            .get(server.url("/metrics"))
            .send()
            .await
            .expect("metrics");
        (r.status(), r.text().await.unwrap_or_default())
    };
    for state in ["success", "abstained", "unsupported", "denied"] {
        assert!(
            metrics.lines().any(|l| l
                .starts_with(&format!("phiflow_decisions_total{{state=\"{state}\"}}"))
                && !l.ends_with(" 0")),
            "{state}"
        );
    }
}

/// `(status, every loc)` of a request.
async fn locs(body: &Value) -> (u16, Vec<Value>) {
    let (status, v) = common::server().post("/v1/decisions", body).await;
    let locs = v["detail"]
        .as_array()
        .map(|d| d.iter().map(|e| e["loc"].clone()).collect());
    assert!(!v.to_string().contains(SECRET), "echoed: {v}");
    (status, locs.unwrap_or_default())
}

fn fixed(options: Value) -> Value {
    json!({"mode": "fixed_choice", "input_text": "Patient note.", "options": options})
}

#[tokio::test]
async fn limits_at_and_over_each_bound() {
    let loc = |p: &[Value]| {
        let mut l = vec![json!("body")];
        l.extend_from_slice(p);
        Value::Array(l)
    };
    let ok = |body: Value| async move {
        let (status, l) = locs(&body).await;
        assert_eq!(status, 200, "{l:?}");
    };
    let bad = |body: Value, want: Value| async move {
        let (status, l) = locs(&body).await;
        assert_eq!(status, 422, "{body}");
        assert!(l.contains(&want), "{want} not in {l:?}");
    };
    // Each option: at most 256 characters (4-byte characters: 1,024 bytes, both bounds at once).
    ok(fixed(json!(["a".repeat(256), "b"]))).await;
    ok(fixed(json!(["😀".repeat(256), "b"]))).await;
    bad(
        fixed(json!(["a".repeat(257), "b"])),
        loc(&[json!("options"), json!(0)]),
    )
    .await;
    bad(
        fixed(json!(["b", "😀".repeat(257)])),
        loc(&[json!("options"), json!(1)]),
    )
    .await;
    // Trimmed first: padding does not count, and a blank option is refused.
    ok(fixed(json!([format!("  {}  ", "a".repeat(256)), "b"]))).await;
    bad(
        fixed(json!(["   ", "b"])),
        loc(&[json!("options"), json!(0)]),
    )
    .await;
    // Control characters, C0, DEL and C1, anywhere in an option.
    for c in [
        '\u{0}', '\u{1}', '\n', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}',
    ] {
        bad(
            fixed(json!([format!("chest{c}pain"), "b"])),
            loc(&[json!("options"), json!(0)]),
        )
        .await;
    }
    // Duplicates after NFKC, case folding and whitespace collapse; the later one is named.
    for (a, b) in [
        ("chest pain", "CHEST PAIN"),
        ("chest pain", "chest \t  pain"),
        ("ｃｈｅｓｔ pain", "chest pain"),
        ("ﬁle review", "file review"),
        ("straße", "STRASSE"),
        ("Å", "Å"),
    ] {
        bad(
            fixed(json!([a, "other", b])),
            loc(&[json!("options"), json!(2)]),
        )
        .await;
    }
    // Counts per mode.
    let many = |n: usize| Value::Array((0..n).map(|i| json!(format!("option {i}"))).collect());
    ok(fixed(many(64))).await;
    bad(fixed(many(65)), loc(&[json!("options")])).await;
    bad(fixed(many(1)), loc(&[json!("options")])).await;
    bad(
        json!({"mode": "boolean_choice", "input_text": "x", "options": ["a", "b", "c"]}),
        loc(&[json!("options")]),
    )
    .await;
    bad(
        json!({"mode": "scalar_score", "input_text": "0.5", "options": ["a"]}),
        loc(&[json!("options")]),
    )
    .await;
    // Input text: 8,192 characters (and 32,768 bytes).
    let text = |s: String| json!({"mode": "fixed_choice", "input_text": s, "options": ["a", "b"]});
    ok(text("a".repeat(8192))).await;
    ok(text("😀".repeat(8192))).await;
    bad(text("a".repeat(8193)), loc(&[json!("input_text")])).await;
    bad(text("   ".into()), loc(&[json!("input_text")])).await;
    bad(text(format!("{SECRET}\u{0}")), loc(&[json!("input_text")])).await;
    // Timeout, versions, policy, identifiers, unknown fields.
    let with = |k: &str, v: Value| {
        let mut b = fixed(json!(["a", "b"]));
        b[k] = v;
        b
    };
    ok(with("timeout_ms", json!(1))).await;
    ok(with("timeout_ms", json!(30000))).await;
    for v in [json!(0), json!(30001), json!(true), json!(1.5)] {
        bad(with("timeout_ms", v), loc(&[json!("timeout_ms")])).await;
    }
    ok(with("schema_version", json!("1.7.0"))).await;
    for v in ["2.0.0", "0.9.0", "1.0", "v1.0.0", "01.0.0"] {
        bad(
            with("schema_version", json!(v)),
            loc(&[json!("schema_version")]),
        )
        .await;
    }
    bad(
        with("compatibility_policy", json!("any")),
        loc(&[json!("compatibility_policy")]),
    )
    .await;
    bad(
        with("namespace", json!("Has Spaces")),
        loc(&[json!("namespace")]),
    )
    .await;
    bad(
        with("secret_field", json!(SECRET)),
        loc(&[json!("secret_field")]),
    )
    .await;
}

/// Options of random lengths and contents around the bounds, judged by an oracle written
/// from the contract alone.
#[tokio::test]
async fn fuzzed_options_follow_the_contract() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let alphabet = [
        'a', 'Z', ' ', 'é', '😀', '\u{1}', '\u{7f}', '\u{85}', 'ﬁ', '\t',
    ];
    for _ in 0..150 {
        let n = 2 + (next() % 3) as usize;
        let options: Vec<String> = (0..n)
            .map(|i| {
                let len = [0, 1, 255, 256, 257][(next() % 5) as usize];
                let c = alphabet[(next() % alphabet.len() as u64) as usize];
                let mut s: String = std::iter::repeat_n(c, len).collect();
                s.push_str(&format!("#{i}"));
                s
            })
            .collect();
        let valid = options.iter().all(|o| {
            let t = o.trim();
            !t.is_empty()
                && t.chars().count() <= 256
                && !t
                    .chars()
                    .any(|c| c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c))
        });
        let (status, _) = locs(&fixed(json!(options))).await;
        assert_eq!(status, if valid { 200 } else { 422 }, "{options:?}");
    }
}

#[tokio::test]
async fn batch_keeps_order_and_caps() {
    let server = common::server();
    let requests = json!([
        {"mode": "fixed_choice", "input_text": "chest pain today", "options": ["chest pain", "rash"]},
        {"mode": "scalar_score", "input_text": "rated 0.25"},
        {"mode": "fixed_choice", "input_text": "x", "options": ["a", "b"], "namespace": "elsewhere"},
    ]);
    let (status, v) = server
        .post("/v1/decisions/batch", &json!({"requests": requests}))
        .await;
    assert_eq!(status, 200, "{v}");
    let states: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["success", "success", "denied"]);
    assert_eq!(v["results"][1]["scalar_score"], 0.25);
    // Each item equals the single call.
    for (i, r) in requests.as_array().unwrap().iter().enumerate() {
        assert_eq!(decide(server, r.clone()).await, v["results"][i]);
    }

    let item = |n: usize| json!({"mode": "fixed_choice", "input_text": "a".repeat(n), "options": ["a", "b"]});
    let batch = |items: Vec<Value>| json!({"requests": items});
    let (status, _) = server
        .post("/v1/decisions/batch", &batch(vec![item(10); 32]))
        .await;
    assert_eq!(status, 200);
    let (status, v) = server
        .post("/v1/decisions/batch", &batch(vec![item(10); 33]))
        .await;
    assert_eq!(
        (status, &v["detail"][0]["loc"]),
        (422, &json!(["body", "requests"]))
    );
    let (status, v) = server.post("/v1/decisions/batch", &batch(vec![])).await;
    assert_eq!(status, 422, "{v}");
    // The aggregate cap: 16 × 8,192 = 131,072 characters pass, one more does not.
    let mut items = vec![item(8190); 16];
    let (status, v) = server
        .post("/v1/decisions/batch", &batch(items.clone()))
        .await;
    assert_eq!(status, 200, "{v}");
    items[0]["input_text"] = json!("a".repeat(8191));
    let (status, v) = server.post("/v1/decisions/batch", &batch(items)).await;
    assert_eq!(
        (status, &v["detail"][0]["loc"]),
        (422, &json!(["body", "requests"])),
        "{v}"
    );
    // An invalid item is named by its index.
    let (status, v) = server
        .post(
            "/v1/decisions/batch",
            &batch(vec![
                item(5),
                json!({"mode": "fixed_choice",
            "input_text": "x", "options": ["a", "A"]}),
            ]),
        )
        .await;
    assert_eq!(
        (status, &v["detail"][0]["loc"]),
        (422, &json!(["body", "requests", 1, "options", 1]))
    );
}

#[tokio::test]
async fn typed_client_library_and_rest_agree() {
    let server = common::server();
    let client = DecisionClient::new(&server.base, Duration::from_secs(60)).expect("client");
    let mut input = DecisionInput::new(
        Mode::FixedChoice,
        "Follow-up visit for wound check.",
        &["wound check", "medication refill"],
    );
    input.purpose = Some("quality".into());
    let typed = client.decide(&input).await.expect("decide");
    let rest = decide(server, serde_json::to_value(&input).unwrap()).await;
    assert_eq!(serde_json::to_value(&typed).unwrap(), rest);
    let engine = setup::build_engine(&Settings::from_env().decisions).expect("engine");
    let library = decide_value(&engine, &serde_json::to_value(&input).unwrap()).expect("valid");
    assert_eq!(serde_json::to_value(&library).unwrap(), rest);
    assert_eq!(typed.choice(), Some("wound check"));

    let batch = client
        .decide_batch(&[input.clone(), input.clone()])
        .await
        .expect("batch");
    assert_eq!(batch.len(), 2);
    let bad = DecisionInput::new(Mode::BooleanChoice, "x", &["yes", "YES"]);
    match client.decide(&bad).await {
        Err(ClientError::Validation(d)) => assert_eq!(d[0]["loc"], json!(["body", "options", 1])),
        other => panic!("{other:?}"),
    }
}

struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Mcp {
    fn spawn() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_phiflow"))
            .arg("mcp")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn phiflow mcp");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, msg: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .expect("write");
        stdin.flush().await.expect("flush");
    }

    /// The response with this id; every line on stdout must be JSON-RPC 2.0.
    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .stdout
                .next_line()
                .await
                .expect("read")
                .expect("stdout closed");
            let msg: Value = serde_json::from_str(&line).expect("JSON-RPC line");
            assert_eq!(msg["jsonrpc"], "2.0");
            if msg["id"] == json!(id) {
                return msg;
            }
        }
    }
}

#[tokio::test]
async fn mcp_session_over_stdio_equals_rest() {
    let server = common::server();
    tokio::time::timeout(Duration::from_secs(120), async {
        let mut mcp = Mcp::spawn();
        let init = mcp
            .request(1, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "phiflow-test", "version": "0"}}))
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "phiflow");
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;

        let list = mcp.request(2, "tools/list", json!({})).await;
        let tools = list["result"]["tools"].as_array().expect("tools");
        assert_eq!(tools.len(), 1);
        let tool = &tools[0];
        assert_eq!(tool["name"], "service_decide");
        assert_eq!(
            tool["annotations"],
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true,
                "openWorldHint": false})
        );
        let input = &tool["inputSchema"];
        assert_eq!(input["additionalProperties"], false);
        assert_eq!(input["required"], json!(["mode", "input_text"]));
        assert_eq!(input["properties"]["options"]["items"]["maxLength"], 256);
        let output = &tool["outputSchema"];
        assert_eq!(output["$id"], "https://phiflow.dev/schemas/decision-result/1.0.0");
        let (_, doc) = server.get("/openapi.json").await;
        let mut rest_schema = doc["components"]["schemas"]["DecisionResult"].clone();
        let mut mcp_schema = output.clone();
        for s in [&mut rest_schema, &mut mcp_schema] {
            if let Some(o) = s.as_object_mut() {
                o.remove("$id");
                o.remove("$schema");
            }
        }
        assert_eq!(mcp_schema, rest_schema, "one result schema for MCP and REST");

        for (id, args) in [
            (3, json!({"mode": "fixed_choice", "input_text": "Patient reports chest pain.",
                "options": ["chest pain", "headache"]})),
            (4, json!({"mode": "multi_label", "input_text": "The weather was pleasant.",
                "options": ["cough", "fever"]})),
            (5, json!({"mode": "scalar_score", "input_text": "Pain relief 0.75", "purpose": "analytics"})),
        ] {
            let call = mcp
                .request(id, "tools/call", json!({"name": "service_decide", "arguments": args}))
                .await;
            let result = &call["result"];
            assert_eq!(result["isError"], false, "{call}");
            let rest = decide(server, args.clone()).await;
            assert_eq!(result["structuredContent"], rest);
            let text = result["content"][0]["text"].as_str().expect("text content");
            assert_eq!(serde_json::from_str::<Value>(text).expect("json"), rest);
        }
        let call = mcp
            .request(6, "tools/call", json!({"name": "service_decide", "arguments":
                {"mode": "fixed_choice", "input_text": SECRET, "options": ["a", "a"], "extra": SECRET}}))
            .await;
        assert_eq!(call["result"]["isError"], true, "{call}");
        let text = call["result"]["content"][0]["text"].as_str().expect("text");
        assert!(!text.contains(SECRET), "{text}");
        let detail: Value = serde_json::from_str(text).expect("json");
        let locs: Vec<&Value> = detail["detail"].as_array().unwrap().iter().map(|d| &d["loc"]).collect();
        assert!(locs.contains(&&json!(["options", 1])) && locs.contains(&&json!(["extra"])), "{detail}");

        drop(mcp.stdin.take());
        assert_eq!(mcp.stdout.next_line().await.expect("read"), None);
        assert!(mcp.child.wait().await.expect("exit").success());
    })
    .await
    .expect("MCP session finished in time");
}

#[tokio::test]
async fn encoder_backend_decides_by_meaning() {
    let server = encoder_server();
    let body = json!({"mode": "fixed_choice",
        "input_text": "She reports feeling very sad and hopeless most days.",
        "options": ["depressed mood", "bone fracture", "fever"]});
    let r = decide(server, body.clone()).await;
    assert_eq!(
        (r["state"].as_str(), r["choice"].as_str()),
        (Some("success"), Some("depressed mood")),
        "{r}"
    );
    check_invariants(&r, body["input_text"].as_str().unwrap());
    let b = &r["backend"];
    assert_eq!(b["kind"], "encoder");
    assert_eq!(b["model_id"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(b["license_id"], "Apache-2.0");
    assert!(
        b["revision"]
            .as_str()
            .is_some_and(|v| v.starts_with("sha256:53aa5117")),
        "{b}"
    );
    assert_eq!(
        r["calibration"]["calibration_id"],
        "phiflow.minilm.fixed_option.v1"
    );
    assert_eq!(r["calibration"]["method"], "cosine_softmax_gated");

    let mut other = body.clone();
    other["calibration_id"] = json!("phiflow.synthetic.fixed_option.v1");
    let r = decide(server, other).await;
    assert_eq!(
        (r["state"].as_str(), r["code"].as_str()),
        (Some("conflict"), Some("calibration_mismatch"))
    );
    let mut rushed = body.clone();
    rushed["timeout_ms"] = json!(1);
    let r = decide(server, rushed).await;
    assert_eq!(
        (r["state"].as_str(), r["code"].as_str()),
        (Some("failure"), Some("backend_timeout"))
    );
    let r = decide(
        server,
        json!({"mode": "scalar_score", "input_text": "Rated 0.5"}),
    )
    .await;
    assert_eq!(
        (r["state"].as_str(), r["code"].as_str()),
        (Some("unsupported"), Some("backend_unsupported"))
    );
    let r = decide(
        server,
        json!({"mode": "fixed_choice", "input_text": "Parking level 3 is closed.",
        "options": ["asthma", "migraine"]}),
    )
    .await;
    assert_eq!(
        (r["state"].as_str(), r["code"].as_str()),
        (Some("abstained"), Some("low_confidence"))
    );
}

#[test]
fn encoder_profile_fixtures_replay_with_the_real_model() {
    let mut settings = Settings::from_env().decisions;
    settings.decision_backend = DecisionBackend::Encoder;
    let engine = Arc::new(setup::build_engine(&settings).expect("encoder engine"));
    let profile = engine
        .profiles()
        .get(phiflow::decisions::encoder_backend::ENCODER_PROFILE)
        .expect("profile shipped");
    assert_eq!(
        fixtures::replay(&engine, profile).expect("fixtures read"),
        vec![]
    );
}
