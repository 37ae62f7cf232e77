//! The end of a run: consistency, accounting and the report.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use crate::ids::PodUid;
use crate::metrics::{cpu_seconds, peak_rss_bytes, throughput, LatencyHist, Throughput};
use crate::report::{Accounting, RunReport};
use crate::runner::consistency::{differences, Expected, PodLine};
use crate::runner::quality::{placement_digest, placement_quality};
use crate::runner::AgentSpec;
use crate::workload::gates::GateStatus;
use crate::workload::ResolvedWorkload;

use super::{Driver, PodRec, PodState};

/// Where the pods a run created ended, from each pod's (state, last attempt unschedulable). A pod
/// still assumed at the end counts as lost: its bind never finished.
fn accounting(pods: impl Iterator<Item = (PodState, bool)>) -> Accounting {
    let mut acc = Accounting::default();
    for (state, unschedulable) in pods {
        acc.created += 1;
        match state {
            PodState::Bound(_) => acc.bound += 1,
            PodState::Deleted => acc.deleted += 1,
            PodState::Queued if unschedulable => acc.unschedulable += 1,
            PodState::Queued => acc.pending += 1,
            PodState::Assumed(_) => {}
        }
    }
    acc.lost = acc.created - acc.bound - acc.deleted - acc.unschedulable - acc.pending;
    acc
}

/// The throughput figure a threshold's `dataBucket` names (upstream's `Perc50` ...; anything else
/// is the average).
fn bucket_value(tp: &Throughput, bucket: &str) -> f64 {
    match bucket {
        "Perc50" => tp.p50,
        "Perc90" => tp.p90,
        "Perc95" => tp.p95,
        "Perc99" => tp.p99,
        _ => tp.average,
    }
}

impl Driver {
    pub(super) fn finish(mut self, w: &ResolvedWorkload, wall_start: Instant, cpu_start: f64) -> RunReport {
        // Consistency: the snapshot, the assume cache and the agent agree; no transition was refused.
        let agent_pods: BTreeMap<PodUid, String> = self.agent.pods().into_iter().collect();
        let lines: Vec<PodLine<'_>> = self
            .pods
            .iter()
            .map(|r| PodLine {
                uid: r.info.uid,
                name: &r.info.name,
                expected: match r.state {
                    PodState::Queued => Expected::Queued,
                    PodState::Assumed(n) => Expected::Assumed(n),
                    PodState::Bound(n) => Expected::Bound(n),
                    PodState::Deleted => Expected::Deleted,
                },
                created_by_run: r.created_by_run,
            })
            .collect();
        let mut transition_errors = std::mem::take(&mut self.cache_errors);
        if let Some(b) = &self.binder {
            transition_errors.extend(b.take_cache_errors().iter().map(|e| e.to_string()));
        }
        let mut diffs = differences(&self.snap, &self.cache, &lines, &agent_pods, &transition_errors);
        drop(lines);
        let shutdown = self.agent.shutdown();
        if let Err(e) = &shutdown {
            diffs.push(format!("agent shutdown: {e}"));
        }
        // Accounting over the pods this run created.
        let created = self.pods.iter().filter(|r| r.created_by_run);
        let acc = accounting(created.clone().map(|r| (r.state, r.unschedulable)));
        let mut placements = BTreeMap::new();
        for r in created {
            if let PodState::Bound(node) = r.state {
                placements
                    .insert(format!("{}/{}", r.namespace, r.info.name), self.snap.interner.resolve(node).to_string());
            }
        }
        let measured: Vec<&PodRec> = self.pods.iter().filter(|r| r.measured).collect();
        let measured_pods = measured.len() as u64;
        let scheduled = measured.iter().filter(|r| matches!(r.state, PodState::Bound(_))).count() as u64;
        let unschedulable = measured.iter().filter(|r| r.state == PodState::Queued && r.unschedulable).count() as u64;
        let start = self.window.start_nanos.unwrap_or(0);
        let mut rel: Vec<u64> = self.measured_bind_nanos.iter().map(|t| t.saturating_sub(start)).collect();
        let window = rel.iter().copied().max().map_or(0, |m| m + 1);
        let tp = throughput(&mut rel, window);
        let h = &self.hist;
        let mut by_result = BTreeMap::new();
        for res in ["scheduled", "unschedulable", "error"] {
            let p = h.percentiles(&format!("attempt.{res}"), 1e3);
            if p.count > 0 {
                by_result.insert(res.to_string(), p);
            }
        }
        let mut stages = BTreeMap::new();
        for (k, name) in [
            ("createdToScheduled", "stage.created_to_scheduled"),
            ("scheduledToBound", "stage.scheduled_to_bound"),
            ("boundToRunning", "stage.bound_to_running"),
        ] {
            stages.insert(k.to_string(), h.percentiles(name, 1e6));
        }
        let pending_total = self.pods.iter().filter(|r| r.state == PodState::Queued).count() as u64;
        let mut quality = placement_quality(&self.snap, self.largest_shape, pending_total);
        quality.topology_skew = crate::runner::quality::topology_skew(
            &self.snap,
            &self.spread,
            self.pods.iter().filter(|r| r.created_by_run).map(|r| (r.profile, &*r.info)),
        );
        let threshold = w.threshold.as_ref().map(|t| t.get("")).filter(|v| *v > 0.0);
        let metric = &w.threshold_metric_selector;
        let value = bucket_value(&tp, &metric.data_bucket);
        let threshold_passed = threshold.map(|th| if metric.expect_lower { value < th } else { value > th });
        if let Some(mut o) = self.events_out.take() {
            let _ = o.flush();
        }
        use crate::report::histogram as hk;
        let mut histograms = BTreeMap::new();
        for (key, name, unit) in [
            (hk::ATTEMPT_LATENCY_MICROS, "attempt", 1_000),
            (hk::E2E_LATENCY_MICROS, "e2e", 1_000),
            (hk::POD_STARTUP_MILLIS, "startup", 1_000_000),
        ] {
            if let Some(hist) = h.get(name) {
                histograms.insert(key.to_string(), hist.encode_in(unit));
            }
        }
        let workload_digest = {
            use sha2::{Digest, Sha256};
            // Template paths are absolute; digest them relative to the working directory so that
            // two checkouts of the same workloads agree.
            let mut text = format!("{:?}", w.ops);
            if let Ok(cwd) = std::env::current_dir() {
                text = text.replace(&format!("{}/", cwd.display()), "");
            }
            format!("{:x}", Sha256::digest(text.as_bytes()))
        };
        let small = placements.len() <= 20_000;
        let cri = match &self.opts.agent {
            AgentSpec::Custom { report: Some(report), .. } => report(&|uid| self.pod_times(uid)),
            _ => None,
        };
        RunReport {
            test_case: w.test_case.clone(),
            workload: w.workload.clone(),
            labels: w.labels.clone(),
            seed: self.opts.seed,
            threads: self.engine.threads(),
            rep: self.opts.rep,
            pair: None,
            arm: None,
            config_source: self.config_source.clone(),
            config_digest: self.config_digest.clone(),
            workload_digest,
            agent: self.agent.name().to_string(),
            virtual_time: self.opts.virtual_time,
            virtual_cycle_cost: self.vclock.is_some().then_some(self.cycle_cost),
            // Gates that do not take effect as set, with the reason (the field's name predates the statuses).
            feature_gates_ignored: w
                .gate_statuses
                .iter()
                .filter_map(|(_, _, st)| match st {
                    GateStatus::NotApplicable(r) | GateStatus::NotHonoured(r) | GateStatus::Skip(r) => {
                        Some(format!("{} ({r})", st.word()))
                    }
                    GateStatus::Default | GateStatus::Honoured(_) => None,
                })
                .collect(),
            feature_gates_honoured: w
                .gate_statuses
                .iter()
                .filter(|(_, _, st)| matches!(st, GateStatus::Honoured(_)))
                .map(|(name, value, _)| format!("{name}={value}"))
                .collect(),
            outcome: crate::report::Outcome::default(),
            opportunistic_batching: self.batches.as_ref().map(|b| {
                let s = b.stats();
                crate::report::BatchingReport {
                    hint_used: s.hint_used,
                    hint_not_used: s.hint_not_used,
                    no_hint: s.no_hint,
                    flushed: s.flushed.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                }
            }),
            measured_pods,
            scheduled_pods: scheduled,
            unschedulable_pods: unschedulable,
            duration_seconds: window as f64 / 1e9,
            wall_seconds: wall_start.elapsed().as_secs_f64(),
            cpu_seconds: cpu_seconds() - cpu_start,
            throughput: tp,
            attempt_latency_micros: h.percentiles("attempt", 1e3),
            attempt_latency_by_result_micros: by_result,
            e2e_latency_micros: h.percentiles("e2e", 1e3),
            pod_startup_millis: h.percentiles("startup", 1e6),
            pod_startup_stages_millis: stages,
            extension_point_micros: self
                .engine
                .profiler
                .by_point()
                .into_iter()
                .map(|(k, h)| (k.to_string(), LatencyHist(h.clone()).percentiles(1e3)))
                .collect(),
            plugin_timings: self
                .engine
                .profiler
                .by_plugin()
                .into_iter()
                .map(|((plugin, point), h)| crate::report::PluginTiming {
                    plugin: plugin.to_string(),
                    extension_point: point.to_string(),
                    calls: h.len(),
                    p50_micros: h.value_at_quantile(0.5) as f64 / 1e3,
                    p99_micros: h.value_at_quantile(0.99) as f64 / 1e3,
                    total_micros: h.mean() * h.len() as f64 / 1e3,
                })
                .collect(),
            plugin_sample_percent: self.opts.plugin_sample_percent,
            counters: self.counters.clone(),
            accounting: acc,
            unschedulable_reasons: self.unschedulable_reasons.clone(),
            cache_consistent: diffs.is_empty(),
            cache_differences: diffs.into_iter().take(50).collect(),
            placement_quality: quality,
            placement_digest: placement_digest(&placements),
            placements: small.then_some(placements),
            peak_rss_bytes: peak_rss_bytes(),
            threshold,
            threshold_metric: format!(
                "SchedulingThroughput/{}",
                if metric.data_bucket.is_empty() { "Average" } else { &metric.data_bucket }
            ),
            threshold_passed,
            histograms,
            cri,
            instructions: None,
        }
    }

    /// The driver's times of pod `uid`, for an agent's report.
    pub(super) fn pod_times(&self, uid: PodUid) -> Option<crate::runner::PodTimes> {
        let r = self.pods.get(usize::try_from(uid.0).ok()?.checked_sub(1)?)?;
        Some(crate::runner::PodTimes {
            created_nanos: r.created_nanos,
            scheduled_nanos: r.scheduled_nanos,
            bound_nanos: r.bound_nanos,
            measured: r.measured,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Sym;

    #[test]
    fn accounting_counts_each_end_state_and_an_unfinished_bind_as_lost() {
        let node = Sym(1);
        // (pods as (state, unschedulable)) -> (created, bound, deleted, unschedulable, pending, lost)
        type Case<'a> = (&'a [(PodState, bool)], [u64; 6]);
        let cases: &[Case] = &[
            (&[], [0, 0, 0, 0, 0, 0]),
            (&[(PodState::Bound(node), false), (PodState::Bound(node), true)], [2, 2, 0, 0, 0, 0]),
            (&[(PodState::Queued, true), (PodState::Queued, false)], [2, 0, 0, 1, 1, 0]),
            (&[(PodState::Deleted, true), (PodState::Assumed(node), false)], [2, 0, 1, 0, 0, 1]),
        ];
        for (pods, want) in cases {
            let a = accounting(pods.iter().copied());
            assert_eq!([a.created, a.bound, a.deleted, a.unschedulable, a.pending, a.lost], *want, "{pods:?}");
        }
    }

    #[test]
    fn a_threshold_bucket_picks_its_throughput_figure() {
        let tp = Throughput { average: 1.0, p50: 50.0, p90: 90.0, p95: 95.0, p99: 99.0, ..Default::default() };
        for (bucket, want) in
            [("Perc50", 50.0), ("Perc90", 90.0), ("Perc95", 95.0), ("Perc99", 99.0), ("Average", 1.0), ("", 1.0)]
        {
            assert_eq!(bucket_value(&tp, bucket), want, "{bucket:?}");
        }
    }
}
