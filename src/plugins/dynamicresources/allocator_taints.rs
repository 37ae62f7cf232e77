//! Device taints in the structured allocator (DRADeviceTaints, on in v1.37): a device with a
//! `NoSchedule` or `NoExecute` taint that none of the request's tolerations tolerates is not
//! allocated for it (`taintPreventsAllocation`); other effects (`None`) are ignored. The taints are
//! the device's own and those DeviceTaintRules add ([`crate::snapshot::dra::DraObjects::add_taint_rule`]).

use crate::api::resource::Device;
use crate::api::resource_counters::DeviceToleration;

/// `taintPreventsAllocation`.
pub(super) fn taint_prevents_allocation(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    device.taints.iter().any(|taint| {
        matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute") && !tolerations.iter().any(|t| t.tolerates(taint))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::resource_counters::DeviceTaint;

    fn taint(key: &str, value: &str, effect: &str) -> DeviceTaint {
        DeviceTaint { key: key.into(), value: value.into(), effect: effect.into(), time_added: None }
    }

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> DeviceToleration {
        DeviceToleration {
            key: key.into(),
            operator: operator.into(),
            value: value.into(),
            effect: effect.into(),
            toleration_seconds: None,
        }
    }

    #[test]
    fn taints_and_tolerations() {
        // (name, taints, tolerations, prevents)
        let cases: Vec<(&str, Vec<DeviceTaint>, Vec<DeviceToleration>, bool)> = vec![
            ("untainted", vec![], vec![], false),
            ("NoSchedule", vec![taint("k", "v", "NoSchedule")], vec![], true),
            ("NoExecute", vec![taint("k", "v", "NoExecute")], vec![], true),
            ("None is ignored", vec![taint("k", "v", "None")], vec![], false),
            ("Exists on the key", vec![taint("k", "v", "NoSchedule")], vec![toleration("k", "Exists", "", "")], false),
            ("Exists without key", vec![taint("k", "v", "NoExecute")], vec![toleration("", "Exists", "", "")], false),
            ("Equal value", vec![taint("k", "v", "NoSchedule")], vec![toleration("k", "Equal", "v", "")], false),
            ("empty operator is Equal", vec![taint("k", "v", "NoSchedule")], vec![toleration("k", "", "v", "")], false),
            ("Equal other value", vec![taint("k", "v", "NoSchedule")], vec![toleration("k", "Equal", "w", "")], true),
            ("other key", vec![taint("k", "v", "NoSchedule")], vec![toleration("j", "Exists", "", "")], true),
            (
                "other effect",
                vec![taint("k", "v", "NoSchedule")],
                vec![toleration("k", "Exists", "", "NoExecute")],
                true,
            ),
            (
                "one of two tolerated",
                vec![taint("k", "v", "NoSchedule"), taint("j", "v", "NoExecute")],
                vec![toleration("k", "Exists", "", "")],
                true,
            ),
            (
                "both tolerated",
                vec![taint("k", "v", "NoSchedule"), taint("j", "v", "NoExecute")],
                vec![toleration("k", "Exists", "", ""), toleration("j", "Equal", "v", "NoExecute")],
                false,
            ),
        ];
        for (name, taints, tolerations, want) in cases {
            let device = Device { name: "d".into(), taints, ..Device::default() };
            assert_eq!(taint_prevents_allocation(&device, &tolerations), want, "{name}");
        }
    }
}
