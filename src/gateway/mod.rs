//! The LLM privacy gateway: detect PHI, fail closed, replace each span by a placeholder,
//! re-scan what would leave (tripwire), send it to the operator's OpenAI-compatible endpoint,
//! restore only known placeholders in the answer, and append a PHI-free hash-chained audit
//! record. This module holds the pieces that need no model; `api::gateway` runs detection.

pub mod audit;
pub mod placeholders;
pub mod policy;
pub mod upstream;

pub use audit::AuditLog;
pub use placeholders::{Redaction, redact};
pub use policy::{GatewaySpan, check_spans, normalize_category};
pub use upstream::Upstream;

/// Why the gateway refused or could not finish; every variant has a fixed reason code and
/// carries no caller text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 400 `gateway_blocked`: nothing was sent.
    Blocked(BlockReason),
    /// 400 `gateway_reidentification_error`: the answer cannot be restored safely.
    Reidentification(ReidReason),
    /// 503 `gateway_not_configured`.
    NotConfigured,
    /// 502 `gateway_transport_error`.
    Transport(TransportReason),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockReason {
    ConfidenceBelowThreshold,
    DisallowedCategory,
    InvalidOffsets,
    OverlappingSpans,
    OutboundTripwire,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReidReason {
    UnknownPlaceholder,
    MangledPlaceholder,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportReason {
    Failed,
    Timeout,
    InvalidResponse,
}

impl Failure {
    pub fn status(self) -> u16 {
        match self {
            Failure::Blocked(_) | Failure::Reidentification(_) => 400,
            Failure::NotConfigured => 503,
            Failure::Transport(_) => 502,
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Failure::Blocked(_) => "gateway_blocked",
            Failure::Reidentification(_) => "gateway_reidentification_error",
            Failure::NotConfigured => "gateway_not_configured",
            Failure::Transport(_) => "gateway_transport_error",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Failure::Blocked(_) => "The prompt was not sent: the privacy policy blocked it",
            Failure::Reidentification(_) => {
                "The answer could not be re-identified safely and is withheld"
            }
            Failure::NotConfigured => "No upstream endpoint is configured for the gateway",
            Failure::Transport(_) => "The upstream endpoint failed or gave an unusable answer",
        }
    }

    /// The reason code.
    pub fn reason(self) -> &'static str {
        match self {
            Failure::Blocked(b) => match b {
                BlockReason::ConfidenceBelowThreshold => "redaction_confidence_below_threshold",
                BlockReason::DisallowedCategory => "disallowed_entity_category",
                BlockReason::InvalidOffsets => "invalid_entity_offsets",
                BlockReason::OverlappingSpans => "overlapping_entity_spans",
                BlockReason::OutboundTripwire => "outbound_tripwire_detected",
            },
            Failure::Reidentification(r) => match r {
                ReidReason::UnknownPlaceholder => "unknown_placeholder",
                ReidReason::MangledPlaceholder => "mangled_placeholder",
            },
            Failure::NotConfigured => "missing_external_endpoint",
            Failure::Transport(t) => match t {
                TransportReason::Failed => "transport_failed",
                TransportReason::Timeout => "transport_timeout",
                TransportReason::InvalidResponse => "invalid_transport_response",
            },
        }
    }

    /// The audit record's status.
    pub fn audit_status(self) -> &'static str {
        match self {
            Failure::Blocked(_) => "blocked",
            Failure::Reidentification(_) => "rejected",
            Failure::NotConfigured => "not_configured",
            Failure::Transport(_) => "transport_error",
        }
    }
}
