//! Request options → one checked plan. The cross-checks between `method`, `shift_dates`,
//! `date_shift_days` and the policy live here, so every entry point (the route, the stream,
//! jobs, FHIR ingestion) refuses the same contradictions with the same messages.

use std::sync::Arc;

use super::operators::{Key, Plan, random_shift_days};
use super::policy::{Method, Policies, Policy};

/// The de-identification options of a request, as sent.
#[derive(Clone, Debug, Default)]
pub struct DeidRequest {
    pub method: Option<Method>,
    pub shift_dates: Option<bool>,
    pub date_shift_days: Option<i64>,
    pub keep_mapping: bool,
    pub keep_year: bool,
    pub policy: Option<String>,
    pub use_safety_sweep: bool,
    pub confidence_threshold: f32,
    pub lang: String,
}

/// One refused option: the field it concerns and why (never caller text).
#[derive(Clone, Debug, PartialEq)]
pub struct Conflict {
    pub field: &'static str,
    pub kind: &'static str,
    pub message: String,
    /// For an unknown policy: the allowed names.
    pub allowed: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error("conflicting options")]
    Conflicts(Vec<Conflict>),
    #[error("no randomness available: {0}")]
    Entropy(String),
}

/// The checked result.
#[derive(Debug)]
pub struct Resolved {
    pub plan: Plan,
    pub policy: Option<Arc<Policy>>,
    pub safety_sweep: bool,
    /// True when the policy turned on a sweep the request had turned off.
    pub sweep_forced: bool,
    pub confidence_threshold: f32,
    /// (code, message) pairs for the response's `warnings`.
    pub warnings: Vec<(&'static str, String)>,
}

/// Languages whose numeric dates are read day first.
const DAY_FIRST_LANGS: &[&str] = &[
    "fr", "de", "it", "es", "nl", "hi", "mr", "te", "pt", "ar", "tr", "cs", "zu", "xh", "sv", "da",
    "no", "vi", "ru", "uk", "el", "ro", "he", "id", "sw",
];

/// Shifts larger than this are refused (a century either way).
pub const MAX_SHIFT_DAYS: i64 = 36_500;

pub fn resolve(
    req: &DeidRequest,
    policies: &Policies,
    secret: Option<&[u8]>,
) -> Result<Resolved, ResolveError> {
    let mut conflicts = Vec::new();
    let conflict = |field, kind, message: String| Conflict {
        field,
        kind,
        message,
        allowed: None,
    };
    let policy = match &req.policy {
        None => None,
        Some(name) => match policies.get(name) {
            Some(p) => Some(p),
            None => {
                conflicts.push(Conflict {
                    allowed: Some(policies.names().to_vec()),
                    ..conflict(
                        "policy",
                        "enum",
                        format!("unknown policy; allowed: {}", policies.names().join(", ")),
                    )
                });
                None
            }
        },
    };
    match (req.shift_dates, req.method) {
        (Some(false), Some(Method::ShiftDates)) => conflicts.push(conflict(
            "shift_dates",
            "value_error",
            "shift_dates is false but method is shift_dates".into(),
        )),
        (Some(true), Some(m)) if m != Method::ShiftDates => conflicts.push(conflict(
            "method",
            "value_error",
            format!("shift_dates is true but method is {}", m.as_str()),
        )),
        _ => {}
    }
    let asked = if req.shift_dates == Some(true) {
        Some(Method::ShiftDates)
    } else {
        req.method
    };
    let method = match (policy.as_ref().and_then(|p| p.method), asked) {
        (Some(pm), Some(m)) if pm != m => {
            conflicts.push(conflict(
                "method",
                "value_error",
                format!(
                    "policy {} requires method {}; the request asks for {}",
                    policy.as_ref().map_or("", |p| p.name.as_str()),
                    pm.as_str(),
                    m.as_str()
                ),
            ));
            pm
        }
        (Some(pm), _) => pm,
        (None, m) => m.unwrap_or(Method::Mask),
    };
    if let Some(p) = &policy
        && method == Method::ShiftDates
        && p.fixes("DATE")
    {
        conflicts.push(conflict(
            "method",
            "value_error",
            format!(
                "policy {} fixes what happens to dates; shift_dates contradicts it",
                p.name
            ),
        ));
    }
    match req.date_shift_days {
        Some(_) if method != Method::ShiftDates => conflicts.push(conflict(
            "date_shift_days",
            "value_error",
            format!(
                "date_shift_days applies only to method shift_dates (method is {})",
                method.as_str()
            ),
        )),
        Some(0) => conflicts.push(conflict(
            "date_shift_days",
            "value_error",
            "date_shift_days must not be 0: a zero shift leaves every date as it was".into(),
        )),
        _ => {}
    }
    if !conflicts.is_empty() {
        return Err(ResolveError::Conflicts(conflicts));
    }

    let mut warnings = Vec::new();
    let forced = policy.as_ref().is_some_and(|p| p.force_safety_sweep);
    let sweep_forced = forced && !req.use_safety_sweep;
    if sweep_forced {
        warnings.push((
            "safety_sweep_forced",
            "The policy requires the safety sweep; use_safety_sweep=false was overridden".into(),
        ));
    }
    if req.keep_year && method != Method::ShiftDates {
        warnings.push((
            "keep_year_ignored",
            "keep_year applies only to method shift_dates".into(),
        ));
    }
    if secret.is_none() && matches!(method, Method::Replace | Method::Hash) {
        warnings.push((
            "per_request_key",
            "No SERVICE_DEID_SECRET_KEY is configured: surrogates and hashes are consistent within this request only".into(),
        ));
    }
    let threshold = match policy.as_ref().and_then(|p| p.max_confidence_threshold) {
        Some(cap) => req.confidence_threshold.min(cap),
        None => req.confidence_threshold,
    };
    let key = match secret {
        Some(s) => Key::from_secret(s),
        None => Key::random().map_err(|e| ResolveError::Entropy(e.to_string()))?,
    };
    let shift_days = match req.date_shift_days {
        Some(d) => d,
        None => random_shift_days().map_err(|e| ResolveError::Entropy(e.to_string()))?,
    };
    Ok(Resolved {
        plan: Plan {
            method,
            policy: policy.clone(),
            keep_mapping: req.keep_mapping || policy.as_ref().is_some_and(|p| p.keep_mapping),
            keep_year: req.keep_year,
            shift_days,
            day_first: DAY_FIRST_LANGS.contains(&req.lang.as_str()),
            key,
        },
        safety_sweep: req.use_safety_sweep || forced,
        sweep_forced,
        confidence_threshold: threshold,
        policy,
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> DeidRequest {
        DeidRequest {
            use_safety_sweep: true,
            confidence_threshold: 0.7,
            lang: "en".into(),
            ..Default::default()
        }
    }

    fn fields(r: Result<Resolved, ResolveError>) -> Vec<&'static str> {
        match r {
            Err(ResolveError::Conflicts(c)) => c.iter().map(|c| c.field).collect(),
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    #[test]
    fn method_shift_dates_and_days_cross_checks() {
        let p = Policies::builtin().expect("policies");
        let r = |f: &dyn Fn(&mut DeidRequest)| {
            let mut q = req();
            f(&mut q);
            resolve(&q, &p, None)
        };
        assert_eq!(
            fields(r(&|q| {
                q.shift_dates = Some(false);
                q.method = Some(Method::ShiftDates);
            })),
            ["shift_dates"]
        );
        assert_eq!(
            fields(r(&|q| {
                q.shift_dates = Some(true);
                q.method = Some(Method::Hash);
            })),
            ["method"]
        );
        assert_eq!(
            fields(r(&|q| q.date_shift_days = Some(10))),
            ["date_shift_days"]
        );
        assert_eq!(
            fields(r(&|q| {
                q.method = Some(Method::ShiftDates);
                q.date_shift_days = Some(0);
            })),
            ["date_shift_days"]
        );
        let ok = r(&|q| {
            q.shift_dates = Some(true);
            q.date_shift_days = Some(-12);
        })
        .expect("consistent");
        assert_eq!(
            (ok.plan.method, ok.plan.shift_days),
            (Method::ShiftDates, -12)
        );
        let random = r(&|q| q.method = Some(Method::ShiftDates)).expect("ok");
        assert_ne!(random.plan.shift_days, 0);
    }

    #[test]
    fn policies_force_and_refuse() {
        let p = Policies::builtin().expect("policies");
        let mut q = req();
        q.policy = Some("nope".into());
        match resolve(&q, &p, None) {
            Err(ResolveError::Conflicts(c)) => {
                assert_eq!(c[0].field, "policy");
                assert!(c[0].allowed.as_ref().is_some_and(|a| a.len() == 5));
            }
            other => panic!("{other:?}"),
        }
        q.policy = Some("strict".into());
        q.method = Some(Method::Replace);
        assert_eq!(fields(resolve(&q, &p, None)), ["method"]);
        q.policy = Some("hipaa_safe_harbor".into());
        q.method = Some(Method::ShiftDates);
        assert_eq!(fields(resolve(&q, &p, None)), ["method"]);
        q.method = None;
        q.use_safety_sweep = false;
        let r = resolve(&q, &p, None).expect("ok");
        assert!(r.safety_sweep && r.sweep_forced);
        assert_eq!(r.confidence_threshold, 0.5);
        q.policy = Some("GDPR".into());
        let r = resolve(&q, &p, Some(b"secret")).expect("ok");
        assert_eq!(r.plan.method, Method::Replace);
        assert!(r.plan.keep_mapping);
        assert!(r.warnings.iter().all(|(c, _)| *c != "per_request_key"));
    }
}
