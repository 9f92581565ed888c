//! Semantic versions (semver 2.0.0): request/result `schema_version`, profile versions and
//! same-major migration all need the major number of a strictly parsed version.

/// The numeric core of a semantic version; pre-release and build are validated, not kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemVer {
    pub major: u64,
    pub minor: u64,
    pub patch: u64,
}

/// The schema major this crate reads and writes.
pub const SUPPORTED_MAJOR: u64 = 1;

/// Parses `MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]`; `None` for anything else.
pub fn parse_semver(text: &str) -> Option<SemVer> {
    let (rest, build) = match text.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (text, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    if let Some(pre) = pre
        && !pre.split('.').all(|id| ident_ok(id) && numeric_ok(id))
    {
        return None;
    }
    if let Some(build) = build
        && !build.split('.').all(ident_ok)
    {
        return None;
    }
    let mut parts = core.split('.');
    let major = number(parts.next()?)?;
    let minor = number(parts.next()?)?;
    let patch = number(parts.next()?)?;
    if parts.next().is_some() {
        return None;
    }
    Some(SemVer {
        major,
        minor,
        patch,
    })
}

fn ident_ok(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

/// A purely numeric pre-release identifier must not have a leading zero.
fn numeric_ok(id: &str) -> bool {
    !id.chars().all(|c| c.is_ascii_digit()) || id == "0" || !id.starts_with('0')
}

fn number(part: &str) -> Option<u64> {
    let digits = !part.is_empty() && part.chars().all(|c| c.is_ascii_digit());
    if !digits || (part.len() > 1 && part.starts_with('0')) {
        return None;
    }
    part.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_semver() {
        let v = |major, minor, patch| {
            Some(SemVer {
                major,
                minor,
                patch,
            })
        };
        assert_eq!(parse_semver("1.0.0"), v(1, 0, 0));
        assert_eq!(parse_semver("1.2.3-rc.1"), v(1, 2, 3));
        assert_eq!(parse_semver("1.2.3-alpha-1+build.7"), v(1, 2, 3));
        assert_eq!(parse_semver("10.20.30+meta"), v(10, 20, 30));
        assert_eq!(parse_semver("2.0.0"), v(2, 0, 0));
    }

    #[test]
    fn rejects_non_semver() {
        for bad in [
            "",
            "1",
            "1.0",
            "1.0.0.0",
            "01.0.0",
            "1.01.0",
            "a.b.c",
            "1.0.0-",
            "1.0.0+",
            "1.0.0-01",
            "1.0.0-a..b",
            "1.0.0+a+b",
            " 1.0.0",
            "v1.0.0",
            "-1.0.0",
        ] {
            assert_eq!(parse_semver(bad), None, "{bad:?}");
        }
    }
}
