//! The NDJSON streams over HTTP against a real server, model and ONNX Runtime: identifiers on
//! segment cuts and chunk edges (multi-byte characters included), every chunk size, the same
//! spans as /pii/extract and the same text as /pii/deidentify.

mod common;

use std::sync::OnceLock;

use phiflow::streaming::{SegmentParams, Segmenter};
use serde_json::{Value, json};

fn server() -> &'static common::Server {
    static S: OnceLock<common::Server> = OnceLock::new();
    S.get_or_init(|| {
        common::start(|s| {
            // Stable surrogates, so one-shot and streamed replacements can be compared.
            s.deid_secret_key = Some("streaming-test-key".into());
        })
    })
}

/// Clinical sentences dense with identifiers, non-ASCII names and emoji.
fn sentence(i: usize) -> String {
    let names = [
        "Ann Lee",
        "José Núñez",
        "Zoë Müller",
        "Giovanni Rossi",
        "Maria O'Brien",
    ];
    let name = names[i % names.len()];
    format!(
        "Seen {name} 😀 on 03/{:02}/2021, MRN {}, phone (617) 555-{:04}, email pt{i}@example.org. ",
        1 + i % 28,
        4_829_100 + i * 7,
        1000 + i
    )
}

/// A long note whose default segment cuts fall inside identifiers: a run-on stretch (no
/// sentence starts) with identifiers packed around every multiple of the default window.
fn long_note() -> String {
    let mut text = String::new();
    let mut i = 0;
    while text.chars().count() < 14_000 {
        let at = text.chars().count() % 4096;
        if at > 3300 {
            // Lower-case run-on text: the only cut is a forced one at a word start, among these.
            text.push_str(&format!(
                "then ann lee called from 617-555-{:04} about josé núñez dob 04/{:02}/1950 and ",
                2000 + i,
                1 + i % 28
            ));
        } else {
            text.push_str(&sentence(i));
        }
        i += 1;
    }
    text
}

/// Character ranges of the default segments.
fn cuts(text: &str) -> Vec<usize> {
    let mut s = Segmenter::new(SegmentParams {
        window_chars: 4096,
        context_chars: 128,
        lang: "en".into(),
    });
    s.push(text);
    s.finish();
    let mut out = Vec::new();
    while let Some(seg) = s.next_segment() {
        out.push(text[..seg.start].chars().count());
    }
    out
}

async fn post_ndjson(path: &str, body: &Value) -> (u16, String, Vec<Value>) {
    let r = common::client()
        .post(server().url(path))
        .json(body)
        .send()
        .await
        .expect("request");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = r.text().await.expect("body");
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    (status, ct, lines)
}

type Key = (String, usize, usize);

fn keys(spans: &[Value]) -> Vec<Key> {
    spans
        .iter()
        .map(|s| {
            (
                s["label"].as_str().unwrap().to_string(),
                s["start"].as_u64().unwrap() as usize,
                s["end"].as_u64().unwrap() as usize,
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extract_stream_matches_extract_for_every_chunk_size() {
    let text = long_note();
    let chars: Vec<char> = text.chars().collect();
    let cut_points = cuts(&text);
    assert!(cut_points.len() >= 3, "the note spans several segments");
    let (status, one_shot) = server()
        .post("/pii/extract", &json!({ "text": text }))
        .await;
    assert_eq!(status, 200, "{one_shot}");
    let expected = keys(one_shot["entities"].as_array().unwrap());
    // The test means something: forced cuts fall inside identifiers the service finds.
    let inside = cut_points[1..]
        .iter()
        .filter(|&&c| expected.iter().any(|(_, s, e)| *s < c && c < *e))
        .count();
    let near = cut_points[1..]
        .iter()
        .filter(|&&c| {
            expected
                .iter()
                .any(|(_, s, e)| s.abs_diff(c) <= 2 || e.abs_diff(c) <= 2)
        })
        .count();
    assert!(
        inside + near >= 1,
        "no identifier at any cut: {cut_points:?}"
    );
    for chunk_size in [1, 7, 1024, 32768] {
        let (status, ct, lines) = post_ndjson(
            "/pii/extract/stream",
            &json!({ "text": text, "chunk_size": chunk_size }),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(ct, "application/x-ndjson");
        let last = lines.last().expect("records");
        assert_eq!(last["type"], "final", "{last}");
        let emitted: Vec<Value> = lines
            .iter()
            .filter(|l| l["type"] == "emit")
            .map(|l| l["span"].clone())
            .collect();
        assert!(
            lines
                .iter()
                .all(|l| l["type"] != "retract" && l["type"] != "error")
        );
        assert_eq!(keys(&emitted), expected, "chunk_size {chunk_size}");
        assert_eq!(keys(last["spans"].as_array().unwrap()), expected);
        let mut prev_end = 0;
        for s in &emitted {
            let (a, b) = (
                s["start"].as_u64().unwrap() as usize,
                s["end"].as_u64().unwrap() as usize,
            );
            assert!(a >= prev_end, "emitted in order, never overlapping");
            prev_end = b;
            let (ba, bb) = (
                s["byte_start"].as_u64().unwrap() as usize,
                s["byte_end"].as_u64().unwrap() as usize,
            );
            let by_chars: String = chars[a..b].iter().collect();
            assert_eq!(s["text"].as_str().unwrap(), by_chars);
            assert_eq!(&text[ba..bb], by_chars);
            assert!(s["id"].as_str().unwrap().starts_with("ent_"));
        }
    }
    // Identifiers planted on the cuts are found whole.
    for needle in ["617-555-2", "/1950"] {
        let found = expected
            .iter()
            .any(|(_, s, e)| chars[*s..*e].iter().collect::<String>().contains(needle));
        assert!(found, "{needle} not found");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn extract_stream_honours_its_options() {
    let text = long_note();
    let (status, _, lines) = post_ndjson(
        "/pii/extract/stream",
        &json!({
            "text": text, "include_text": false, "window_chars": 700,
            "tokenizer_context_chars": 40, "max_entity_chars": 64, "chunk_size": 333,
        }),
    )
    .await;
    assert_eq!(status, 200);
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["stats"]["window_chars"], 700);
    let emitted: Vec<&Value> = lines.iter().filter(|l| l["type"] == "emit").collect();
    assert!(emitted.len() > 50);
    assert!(emitted.iter().all(|l| l["span"].get("text").is_none()));
    // Small windows still find the planted identifiers whole.
    let chars: Vec<char> = text.chars().collect();
    let phones = emitted
        .iter()
        .filter(|l| {
            let (a, b) = (
                l["span"]["start"].as_u64().unwrap() as usize,
                l["span"]["end"].as_u64().unwrap() as usize,
            );
            let s: String = chars[a..b].iter().collect();
            s.starts_with("617-555-") && s.len() == 12
        })
        .count();
    assert!(phones >= 5, "{phones}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deidentify_stream_concatenates_to_the_one_shot_output() {
    let text = long_note();
    for (options, chunk_sizes) in [
        (json!({}), &[1usize, 7, 1024, 32768][..]),
        (
            json!({ "method": "replace", "keep_mapping": true }),
            &[7, 4096][..],
        ),
        (json!({ "policy": "hipaa_safe_harbor" }), &[1024][..]),
    ] {
        let mut body = options.clone();
        body["text"] = json!(text);
        let (status, one_shot) = server().post("/pii/deidentify", &body).await;
        assert_eq!(status, 200, "{one_shot}");
        for &chunk_size in chunk_sizes {
            body["chunk_size"] = json!(chunk_size);
            let (status, ct, lines) = post_ndjson("/pii/deidentify/stream", &body).await;
            assert_eq!(status, 200);
            assert_eq!(ct, "application/x-ndjson");
            let last = lines.last().unwrap();
            assert_eq!(last["type"], "final", "{last}");
            let chunks: Vec<&Value> = lines.iter().filter(|l| l["type"] == "chunk").collect();
            for (i, c) in chunks.iter().enumerate() {
                assert_eq!(c["index"], i);
            }
            let joined: String = chunks.iter().map(|c| c["text"].as_str().unwrap()).collect();
            assert_eq!(
                joined, one_shot["deidentified_text"],
                "{options} chunk_size {chunk_size}"
            );
            assert_eq!(last["entities"], one_shot["entities"]);
            assert_eq!(last["counts"], one_shot["counts"]);
            assert_eq!(last.get("mapping"), one_shot.get("mapping"));
            // No replacement is ever cut between two chunks.
            for e in one_shot["entities"].as_array().unwrap() {
                let (a, b) = (
                    e["output_start"].as_u64().unwrap() as usize,
                    e["output_end"].as_u64().unwrap() as usize,
                );
                let mut at = 0;
                for c in &chunks {
                    let n = c["text"].as_str().unwrap().chars().count();
                    assert!(!(at > a && at < b), "a replacement was split at {at}");
                    at += n;
                }
            }
            if chunk_size <= 7 {
                assert!(chunks.len() > 100, "small chunks give many records");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn stream_requests_are_validated_before_streaming() {
    for (path, body, field) in [
        (
            "/pii/extract/stream",
            json!({"text": "x", "chunk_size": 0}),
            "chunk_size",
        ),
        (
            "/pii/extract/stream",
            json!({"text": "x", "window_chars": 10}),
            "window_chars",
        ),
        (
            "/pii/extract/stream",
            json!({"text": "x", "max_entity_chars": 0}),
            "max_entity_chars",
        ),
        (
            "/pii/deidentify/stream",
            json!({"text": "x", "chunk_size": 40000}),
            "chunk_size",
        ),
        (
            "/pii/deidentify/stream",
            json!({"text": "x", "date_shift_days": 5}),
            "date_shift_days",
        ),
        ("/pii/deidentify/stream", json!({"chunk_size": 5}), "text"),
    ] {
        let (status, err) = server().post(path, &body).await;
        assert_eq!(status, 422, "{path} {body}");
        let locs: Vec<&Value> = err["detail"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| &d["loc"][1])
            .collect();
        assert!(locs.contains(&&json!(field)), "{err}");
    }
    let (status, err) = server()
        .post(
            "/pii/extract/stream",
            &json!({"text": "x", "model_name": "nope/missing"}),
        )
        .await;
    assert_eq!(status, 404, "{err}");
    assert_eq!(err["error"]["code"], "model_not_found");
}
