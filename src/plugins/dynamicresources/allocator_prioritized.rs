//! DRAPrioritizedList for the structured allocator: a request with `firstAvailable` lists
//! subrequests, tried in order; the first with which every claim of the pod can be allocated is
//! taken, and its devices' results are named `<request>/<subrequest>`. Constraints name the
//! request (then they apply to whichever subrequest is chosen) or one subrequest. A port of the
//! subrequest parts of upstream's `internal/incubating/allocator_incubating.go` (v1.37.2, where
//! the feature is on by default): `deviceSubRequestAccessor`, `requestData.requestName`, the
//! constraints' `matches`, and `allocateOne`'s loop over subrequests with its
//! `errAllocationResultMaxSizeExceeded` backtracking.

use crate::api::resource::{
    CapacityRequirements, DeviceAllocationMode, DeviceRequest, DeviceSelector, DeviceSubRequest, ExactDeviceRequest,
};

/// `errAllocationResultMaxSizeExceeded`: the claim's devices would pass
/// `AllocationResultsMaxSize`. Returned (as an error string) by the search so that a
/// `firstAvailable` request tries its next subrequest, which may need fewer devices; the search
/// turns it into "no allocation" at a claim boundary, and upstream returns it as it is when the
/// first claim hits it.
pub const MAX_SIZE_EXCEEDED: &str = "allocation max size exceeded";

/// What the allocator needs of a request or of one subrequest (upstream's `requestAccessor`).
#[derive(Clone, Copy, Debug)]
pub struct RequestForm<'a> {
    /// The subrequest's name; `None` for an `exactly` request.
    pub sub_name: Option<&'a str>,
    pub device_class_name: &'a str,
    pub selectors: &'a [DeviceSelector],
    pub mode: DeviceAllocationMode,
    /// The count after defaulting (1).
    pub count: i64,
    pub admin: bool,
    pub capacity: Option<&'a CapacityRequirements>,
    pub tolerations: &'a [crate::api::resource_counters::DeviceToleration],
}

impl<'a> RequestForm<'a> {
    fn exact(e: &'a ExactDeviceRequest) -> Self {
        RequestForm {
            sub_name: None,
            device_class_name: &e.device_class_name,
            selectors: &e.selectors,
            mode: e.mode(),
            count: e.count(),
            admin: e.admin_access.unwrap_or(false),
            capacity: e.capacity.as_ref(),
            tolerations: &e.tolerations,
        }
    }

    fn sub(s: &'a DeviceSubRequest) -> Self {
        RequestForm {
            sub_name: Some(&s.name),
            device_class_name: &s.device_class_name,
            selectors: &s.selectors,
            mode: s.allocation_mode.unwrap_or(DeviceAllocationMode::ExactCount),
            count: s.count.unwrap_or(1),
            admin: false,
            capacity: s.capacity.as_ref(),
            tolerations: &s.tolerations,
        }
    }

    /// The name upstream's errors print: the subrequest's own, else the request's.
    pub fn display_name(&self, request: &'a str) -> &'a str {
        self.sub_name.unwrap_or(request)
    }
}

/// The forms a request can take, in the order they are tried: its `exactly`, or its subrequests.
pub fn forms_of(request: &DeviceRequest) -> Vec<RequestForm<'_>> {
    match &request.exactly {
        Some(e) => vec![RequestForm::exact(e)],
        None => request.first_available.iter().map(RequestForm::sub).collect(),
    }
}

/// The result's request name: `<request>/<subrequest>` for a subrequest.
pub fn result_name(request: &str, sub: Option<&str>) -> String {
    match sub {
        Some(sub) => format!("{request}/{sub}"),
        None => request.to_string(),
    }
}

/// Whether a constraint over `requests` (empty: every request) applies to a device of `request`
/// (of its subrequest `sub`): the constraint names the request, or `<request>/<sub>`.
pub fn constraint_applies(requests: &[&str], request: &str, sub: Option<&str>) -> bool {
    requests.is_empty()
        || requests.iter().any(|&r| {
            r == request
                || sub.is_some_and(|sub| {
                    r.len() == request.len() + 1 + sub.len()
                        && r.starts_with(request)
                        && r[request.len()..].starts_with('/')
                        && r.ends_with(sub)
                })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constraints_name_the_request_or_the_subrequest() {
        let cases: &[(&[&str], &str, Option<&str>, bool)] = &[
            (&[], "req", None, true),
            (&[], "req", Some("a"), true),
            (&["req"], "req", None, true),
            (&["req"], "req", Some("a"), true),
            (&["req/a"], "req", Some("a"), true),
            (&["req/a"], "req", Some("b"), false),
            (&["req/a"], "req", None, false),
            (&["re/qa"], "req", Some("a"), false),
            (&["other"], "req", Some("a"), false),
        ];
        for &(requests, request, sub, want) in cases {
            assert_eq!(constraint_applies(requests, request, sub), want, "{requests:?} {request} {sub:?}");
        }
        assert_eq!(result_name("req", Some("a")), "req/a");
        assert_eq!(result_name("req", None), "req");
    }
}
