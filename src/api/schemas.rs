//! The request schemas of the interface's section 2, every route included.

use super::validate::{Bound, Field, Schema, Ty};

/// The interface's `lang` enumeration.
pub const LANGS: &[&str] = &[
    "am", "as", "bn", "en", "fr", "de", "it", "es", "nl", "hi", "gu", "kn", "ml", "mr", "ne", "or",
    "pa", "ta", "te", "ur", "pt", "ar", "he", "ja", "tr", "id", "th", "ko", "ro", "ru", "sv", "da",
    "no", "sw", "zu", "xh", "zh", "uk", "cs", "el", "vi",
];
pub const METHODS: &[&str] = &["mask", "remove", "replace", "hash", "shift_dates"];
pub const AGGREGATIONS: &[&str] = &["simple", "first", "average", "max"];
pub const DECISION_MODES: &[&str] = &[
    "fixed_choice",
    "boolean_choice",
    "ordered_preference",
    "multi_label",
    "scalar_score",
];

const UNIT: &[Bound] = &[Bound::Ge(0.0), Bound::Le(1.0)];

const fn threshold() -> Field {
    Field::opt("confidence_threshold", Ty::Num).bounded(UNIT)
}

pub static ANALYZE: Schema = Schema {
    name: "AnalyzeRequest",
    fields: &[
        Field::req("text", Ty::Str),
        Field::opt("model_name", Ty::Str),
        Field::opt("aggregation_strategy", Ty::Enum(AGGREGATIONS)).nullable(),
        threshold().nullable(),
        Field::opt("group_entities", Ty::Bool),
        Field::opt("sentence_detection", Ty::Bool),
        Field::opt("sentence_clean", Ty::Bool),
        Field::opt("sentence_language", Ty::Enum(LANGS)),
        Field::opt("use_fast_tokenizer", Ty::Bool),
        Field::opt("keep_alive", Ty::KeepAlive),
    ],
    one_of: &[],
};

macro_rules! pii_common {
    () => {
        [
            threshold(),
            Field::opt("lang", Ty::Enum(LANGS)),
            Field::opt("model_name", Ty::Str),
            Field::opt("normalize_accents", Ty::Bool).nullable(),
            Field::opt("use_smart_merging", Ty::Bool),
            Field::opt("keep_alive", Ty::KeepAlive),
        ]
    };
}

const EXTRACT_FIELDS: [Field; 7] = {
    let [a, b, c, d, e, f] = pii_common!();
    [Field::req("text", Ty::Str), a, b, c, d, e, f]
};

pub static PII_EXTRACT: Schema = Schema {
    name: "PIIExtractRequest",
    fields: &EXTRACT_FIELDS,
    one_of: &[],
};

pub static PII_EXTRACT_STREAM: Schema = Schema {
    name: "PIIExtractStreamRequest",
    fields: &{
        let [a, b, c, d, e, f, g] = EXTRACT_FIELDS;
        [
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            Field::opt("chunk_size", Ty::Int).bounded(&[Bound::Ge(1.0), Bound::Le(32768.0)]),
            Field::opt("include_text", Ty::Bool),
            Field::opt("max_entity_chars", Ty::Int).bounded(&[Bound::Ge(1.0)]),
            Field::opt("tokenizer_context_chars", Ty::Int).bounded(&[Bound::Ge(0.0)]),
            Field::opt("window_chars", Ty::Int).bounded(&[Bound::Ge(64.0)]),
        ]
    },
    one_of: &[],
};

/// Every field of PIIDeidentifyRequest except `text`.
const DEID_OPTIONS: [Field; 13] = {
    let [_, b, c, d, e, f] = pii_common!();
    [
        Field::opt("confidence_threshold", Ty::Num).bounded(UNIT),
        Field::opt("date_shift_days", Ty::Int)
            .nullable()
            .bounded(&[Bound::Ge(-36500.0), Bound::Le(36500.0)]),
        Field::opt("keep_mapping", Ty::Bool),
        Field::opt("keep_year", Ty::Bool),
        b,
        Field::opt("method", Ty::Enum(METHODS)),
        c,
        d,
        Field::opt("policy", Ty::Str).nullable(),
        Field::opt("shift_dates", Ty::Bool).nullable(),
        Field::opt("use_safety_sweep", Ty::Bool),
        e,
        f,
    ]
};

pub static PII_DEIDENTIFY: Schema = Schema {
    name: "PIIDeidentifyRequest",
    fields: &{
        let [a, b, c, d, e, f, g, h, i, j, k, l, m] = DEID_OPTIONS;
        [
            Field::req("text", Ty::Str),
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            k,
            l,
            m,
        ]
    },
    one_of: &[],
};

pub static PII_DEIDENTIFY_STREAM: Schema = Schema {
    name: "PIIDeidentifyStreamRequest",
    fields: &{
        let [a, b, c, d, e, f, g, h, i, j, k, l, m] = DEID_OPTIONS;
        [
            Field::req("text", Ty::Str),
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            k,
            l,
            m,
            Field::opt("chunk_size", Ty::Int).bounded(&[Bound::Ge(1.0), Bound::Le(32768.0)]),
        ]
    },
    one_of: &[],
};

static JOB_DOCUMENT: Schema = Schema {
    name: "DeidentifyJobDocument",
    fields: &[
        Field::req("text", Ty::Str),
        Field::opt("id", Ty::Str).nullable(),
    ],
    one_of: &[],
};

static JOB_WEBHOOK: Schema = Schema {
    name: "JobWebhookRequest",
    fields: &[
        Field::req("url", Ty::Str),
        Field::req("secret", Ty::Str),
        Field::opt("max_attempts", Ty::Int).bounded(&[Bound::Ge(1.0), Bound::Le(10.0)]),
        Field::opt("backoff_seconds", Ty::Num).bounded(&[Bound::Ge(0.0), Bound::Le(60.0)]),
    ],
    one_of: &[],
};

pub static DEIDENTIFY_JOB: Schema = Schema {
    name: "DeidentifyJobRequest",
    fields: &{
        let [a, b, c, d, e, f, g, h, i, j, k, l, m] = DEID_OPTIONS;
        [
            Field::req("documents", Ty::Array(&Ty::Object(&JOB_DOCUMENT))).items(Some(1), None),
            Field::opt("webhook", Ty::Object(&JOB_WEBHOOK)).nullable(),
            a,
            b,
            c,
            d,
            e,
            f,
            g,
            h,
            i,
            j,
            k,
            l,
            m,
        ]
    },
    one_of: &[],
};

pub static PRIVACY_GATEWAY: Schema = Schema {
    name: "PrivacyGatewayRequest",
    fields: &{
        let [a, b, c, d, e, f] = pii_common!();
        [
            Field::req("text", Ty::Str),
            a,
            Field::opt("detector_confidence_floor", Ty::Num).bounded(UNIT),
            Field::opt("disallowed_entity_categories", Ty::Array(&Ty::Str)),
            b,
            c,
            d,
            Field::opt("policy", Ty::Str),
            e,
            f,
        ]
    },
    one_of: &[],
};

pub static MODEL_UNLOAD: Schema = Schema {
    name: "ModelUnloadRequest",
    fields: &[
        Field::opt("all", Ty::Bool),
        Field::opt("model_name", Ty::Str).nullable(),
    ],
    one_of: &["all", "model_name"],
};

pub static OMOP_LOAD: Schema = Schema {
    name: "OmopLoadRequest",
    fields: &[
        Field::req("records_jsonl", Ty::Str),
        Field::opt("validate_constraints", Ty::Bool),
        Field::opt("vocabulary_version", Ty::Str).nullable(),
    ],
    one_of: &[],
};

static CONCEPT_ANCESTOR: Schema = Schema {
    name: "ConceptAncestorRequest",
    fields: &[
        Field::req("ancestor_concept_id", Ty::Int).bounded(&[Bound::Gt(0.0)]),
        Field::req("descendant_concept_id", Ty::Int).bounded(&[Bound::Gt(0.0)]),
    ],
    one_of: &[],
};

pub static COHORT_RESOLVE: Schema = Schema {
    name: "CohortResolveRequest",
    fields: &[
        // Exactly one of `phenotype` and `circe`, and of `records_jsonl` and `load_id`
        // (checked by the handler, which names the field).
        Field::opt("phenotype", Ty::AnyObject),
        Field::opt("circe", Ty::AnyObject),
        Field::opt("records_jsonl", Ty::Str),
        Field::opt("load_id", Ty::Str),
        Field::opt(
            "concept_ancestors",
            Ty::Array(&Ty::Object(&CONCEPT_ANCESTOR)),
        )
        .items(None, Some(1_000_000)),
    ],
    one_of: &[],
};

pub static SMART_INGESTION: Schema = Schema {
    name: "SMARTBackendIngestionRequest",
    fields: &[
        Field::req("fhir_base_url", Ty::Str),
        Field::req("token_url", Ty::Str),
        Field::req("client_id", Ty::Str),
        Field::req("private_key_pem", Ty::Str),
        Field::req("output_dir", Ty::Str),
        Field::opt("checkpoint_path", Ty::Str).nullable(),
        Field::opt("confidence_threshold", Ty::Num).bounded(UNIT),
        Field::opt("export_path", Ty::Str),
        Field::opt("key_id", Ty::Str).nullable(),
        Field::opt("lang", Ty::Enum(LANGS)),
        Field::opt("max_inflight_downloads", Ty::Int).bounded(&[Bound::Ge(1.0)]),
        Field::opt("method", Ty::Enum(METHODS)),
        Field::opt("model_name", Ty::Str),
        Field::opt("normalize_accents", Ty::Bool).nullable(),
        Field::opt("policy", Ty::Str).nullable(),
        Field::opt("poll_interval_seconds", Ty::Num).bounded(&[Bound::Ge(0.0)]),
        Field::opt("request_timeout_seconds", Ty::Num).bounded(&[Bound::Gt(0.0)]),
        Field::opt("scope", Ty::Str),
        Field::opt("use_safety_sweep", Ty::Bool),
        Field::opt("use_smart_merging", Ty::Bool),
        Field::opt("keep_alive", Ty::KeepAlive),
    ],
    one_of: &[],
};

pub static DECISION: Schema = Schema {
    name: "DecisionRequest",
    fields: &[
        Field::req("mode", Ty::Enum(DECISION_MODES)),
        Field::req("input_text", Ty::Str),
        Field::opt("options", Ty::Array(&Ty::Str)).items(None, Some(64)),
        Field::opt("namespace", Ty::Str).nullable(),
        Field::opt("purpose", Ty::Str).nullable(),
        Field::opt("calibration_id", Ty::Str).nullable(),
        Field::opt("timeout_ms", Ty::Int).bounded(&[Bound::Ge(1.0), Bound::Le(30000.0)]),
        Field::opt("schema_version", Ty::Semver),
        Field::opt("compatibility_policy", Ty::Enum(&["same_major"])),
    ],
    one_of: &[],
};

pub static DECISION_BATCH: Schema = Schema {
    name: "DecisionBatchRequest",
    fields: &[Field::req("requests", Ty::Array(&Ty::Object(&DECISION))).items(Some(1), Some(32))],
    one_of: &[],
};
