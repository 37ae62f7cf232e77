use super::*;

const S: u64 = 1_000_000_000;

fn pod(uid: u64, priority: i32) -> QueuedPod<()> {
    QueuedPod::new(PodUid(uid), priority, ())
}

fn queue() -> SchedulingQueue<()> {
    SchedulingQueue::new(DEFAULT_INITIAL_BACKOFF_NANOS, DEFAULT_MAX_BACKOFF_NANOS)
}

fn pop_all(q: &mut SchedulingQueue<()>, now: u64) -> Vec<u64> {
    std::iter::from_fn(|| q.pop(now)).map(|p| p.uid.0).collect()
}

#[test]
fn backoff_doubles_and_caps() {
    let check = |attempts, expected_s| {
        assert_eq!(backoff_duration_nanos(attempts, S, 10 * S), expected_s * S, "attempts {attempts}");
    };
    check(0, 1);
    check(1, 1);
    check(2, 2);
    check(3, 4);
    check(4, 8);
    check(5, 10);
    check(60, 10);
    // An initial backoff above the maximum is capped too.
    assert_eq!(backoff_duration_nanos(1, 20 * S, 10 * S), 10 * S);
}

#[test]
fn active_queue_orders_by_priority_then_timestamp_then_insertion() {
    // (uid, priority, added at)
    let check = |pods: &[(u64, i32, u64)], expected: &[u64]| {
        let mut q = queue();
        for &(uid, prio, at) in pods {
            q.add(pod(uid, prio), at);
        }
        assert_eq!(pop_all(&mut q, 100 * S), expected, "{pods:?}");
    };
    check(&[(1, 0, 0), (2, 10, 5), (3, 5, 1)], &[2, 3, 1]);
    check(&[(1, 0, 3), (2, 0, 1), (3, 0, 2)], &[2, 3, 1]);
    check(&[(5, 0, 1), (4, 0, 1), (6, 0, 1)], &[5, 4, 6]);
    check(&[(1, -5, 0), (2, i32::MIN, 0), (3, i32::MAX, 9)], &[3, 1, 2]);
}

#[test]
fn pop_counts_attempts_and_marks_in_flight() {
    let mut q = queue();
    q.add(pod(1, 0), 0);
    let p = q.pop(7).unwrap();
    assert_eq!((p.attempts, p.initial_attempt_nanos), (1, Some(7)));
    assert_eq!(q.lens().in_flight, 1);
    q.add_backoff(p, 8);
    q.flush_backoff_completed(100 * S);
    let p = q.pop(100 * S).unwrap();
    assert_eq!((p.attempts, p.initial_attempt_nanos), (2, Some(7)));
    q.done(p.uid);
    assert_eq!(q.lens(), QueueLens::default());
}

#[test]
fn error_backoff_doubles_and_flushes_on_the_tick_after_expiry() {
    // A pod failing with an error n times waits 1, 2, 4, 8, 10, 10 s; it leaves the error heap at the
    // first whole-second tick after its expiry (at the expiry itself it is still backing off), and
    // SchedulerPopFromBackoffQ never pops from the error heap.
    for pop_from_backoff in [true, false] {
        let mut q = queue().with_pop_from_backoff(pop_from_backoff);
        q.add(pod(1, 0), 0);
        let mut now = 0;
        for expected_wait_s in [1, 2, 4, 8, 10, 10] {
            let p = q.pop(now).expect("pod is active");
            assert_eq!(q.add_backoff(p, now), Location::Backoff);
            let expiry = now + expected_wait_s * S;
            assert_eq!(q.next_wakeup_nanos(), Some(expiry + S), "{pop_from_backoff}");
            assert!(q.pop(expiry).is_none(), "still backing off at its expiry");
            now = expiry + S;
        }
    }
}

/// A pod rejected by plugin 0 at `failed_at`, moved by a NodeAdd at `event_at`.
fn rejected_then_moved(q: &mut SchedulingQueue<()>, uid: u64, priority: i32, failed_at: u64, event_at: u64) {
    q.add(pod(uid, priority), failed_at);
    let p = q.pop(failed_at).unwrap();
    assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), failed_at), Location::Unschedulable);
    q.on_event(ClusterEvent::NodeAdd { node: 0 }, event_at);
}

#[test]
fn pop_from_backoff_gate_changes_when_and_in_what_order_pods_leave_backoff() {
    const MS: u64 = S / 1000;
    // (gate, pods as (uid, priority, failed at, moved at), pop times) -> pods popped at each time.
    type Case = (bool, &'static [(u64, i32, u64, u64)], &'static [u64], &'static [&'static [u64]]);
    let cases: &[Case] = &[
        // activeQ empty: on, the backoffQ head is popped at once; off, it waits for the tick after
        // its expiry (1.3 s -> the 2 s tick).
        (true, &[(1, 0, 300 * MS, 400 * MS)], &[500 * MS], &[&[1]]),
        (false, &[(1, 0, 300 * MS, 400 * MS)], &[500 * MS, 1_999 * MS, 2 * S], &[&[], &[], &[1]]),
        // On: expiries 1.2 s and 1.7 s share the 1 s window, so QueueSort orders them (priority 10
        // first); 2.1 s is in the next window. Off: the earliest expiry first, flushed by ticks.
        (
            true,
            &[(1, 0, 200 * MS, 300 * MS), (2, 10, 700 * MS, 800 * MS), (3, 100, 1_100 * MS, 1_150 * MS)],
            &[1_200 * MS],
            &[&[2, 1, 3]],
        ),
        (false, &[(1, 0, 200 * MS, 300 * MS), (2, 10, 700 * MS, 800 * MS)], &[1_500 * MS, 2 * S], &[&[], &[2, 1]]),
    ];
    for (gate, pods, times, want) in cases {
        let mut q = queue().with_pop_from_backoff(*gate);
        for &(uid, prio, failed, moved) in *pods {
            rejected_then_moved(&mut q, uid, prio, failed, moved);
            assert_eq!(q.location(PodUid(uid)), Some(Location::Backoff), "gate {gate}, pod {uid}");
        }
        for (t, want) in times.iter().zip(want.iter()) {
            assert_eq!(pop_all(&mut q, *t), *want, "gate {gate}, {pods:?}, pop at {t}");
        }
    }
}

#[test]
fn pop_from_backoff_gate_aligns_expiry_to_its_window() {
    // Rejected at 0.3 s (expiry 1.3 s), moved by an event at 1.5 s: on, the expiry is the 1 s window,
    // which is the current one, so the pod still backs off; off, 1.3 s has passed: activeQ.
    for (gate, want) in [(true, Location::Backoff), (false, Location::Active)] {
        let mut q = queue().with_pop_from_backoff(gate);
        rejected_then_moved(&mut q, 1, 0, 3 * S / 10, 3 * S / 2);
        assert_eq!(q.location(PodUid(1)), Some(want), "gate {gate}");
    }
}

#[test]
fn a_preempting_pod_waits_in_unschedulable_until_the_last_victim_is_gone() {
    // Plugin 0 rejected the pod; its asynchronous preemption is running. The first victim's deletion
    // finds it still preempting (PreEnqueue blocks it); a node event does not re-evaluate it; the last
    // victim's deletion, after the preemption ended, moves it. With SchedulerPopFromBackoffQ off,
    // PreEnqueue runs only on the way into activeQ, so the pod enters backoffQ and is blocked at the flush.
    for gate in [true, false] {
        let mut q = queue().with_pop_from_backoff(gate);
        q.register_hint(0, default_hint_fn("NodeResourcesFit").unwrap());
        q.add(pod(1, 0), 0);
        let p = q.pop(0).unwrap();
        q.set_preempting(PodUid(1), true);
        assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), 0), Location::Unschedulable);
        let victim = |n| ClusterEvent::AssignedPodDelete { pod: PodUid(n), node: 0 };
        q.on_event(victim(7), S / 10);
        let want = if gate { Location::Unschedulable } else { Location::Backoff };
        assert_eq!(q.location(PodUid(1)), Some(want), "gate {gate}");
        if gate {
            q.on_event(ClusterEvent::NodeAdd { node: 1 }, S / 5);
            assert_eq!(q.location(PodUid(1)), Some(Location::Unschedulable), "not the gating plugin's event");
        } else {
            assert!(q.pop(2 * S).is_none(), "flushed but blocked by PreEnqueue");
            assert_eq!(q.location(PodUid(1)), Some(Location::Unschedulable));
        }
        q.set_preempting(PodUid(1), false);
        q.on_event(victim(8), 2 * S);
        assert_eq!(q.location(PodUid(1)), Some(Location::Active), "gate {gate}");
    }
}

#[test]
fn unschedulable_pods_wait_for_an_interesting_event() {
    // Rejected by plugin 0 (NodeResourcesFit) or 1 (NodeAffinity) or 2 (SchedulingGates).
    let check = |rejector: u8, event: ClusterEvent, expected_moved: bool| {
        let mut q = queue();
        q.register_hint(0, default_hint_fn("NodeResourcesFit").unwrap());
        q.register_hint(1, default_hint_fn("NodeAffinity").unwrap());
        q.register_hint(2, default_hint_fn("SchedulingGates").unwrap());
        q.add(pod(1, 0), 0);
        let p = q.pop(0).unwrap();
        assert_eq!(q.add_unschedulable(p, PluginSet::of(&[rejector]), 0), Location::Unschedulable);
        let moved = q.on_event(event, 20 * S);
        assert_eq!(moved == 1, expected_moved, "rejector {rejector}, {event:?}");
        let expected_loc = if expected_moved { Location::Active } else { Location::Unschedulable };
        assert_eq!(q.location(PodUid(1)), Some(expected_loc));
    };
    let (node, pod9) = (3, PodUid(9));
    check(0, ClusterEvent::NodeAdd { node }, true);
    check(0, ClusterEvent::NodeUpdate { node, change: NodeChange::ALLOCATABLE }, true);
    check(0, ClusterEvent::NodeUpdate { node, change: NodeChange::LABEL }, false);
    check(0, ClusterEvent::AssignedPodDelete { pod: pod9, node }, true);
    check(0, ClusterEvent::AssignedPodAdd { pod: pod9, node }, false);
    check(0, ClusterEvent::AssignedPodUpdate { pod: pod9, node, resources_scaled_down: true }, true);
    check(0, ClusterEvent::AssignedPodUpdate { pod: pod9, node, resources_scaled_down: false }, false);
    check(1, ClusterEvent::NodeUpdate { node, change: NodeChange::LABEL.union(NodeChange::TAINT) }, true);
    check(1, ClusterEvent::AssignedPodDelete { pod: pod9, node }, false);
    check(2, ClusterEvent::UnscheduledPodUpdate { pod: PodUid(1) }, true);
    check(2, ClusterEvent::UnscheduledPodUpdate { pod: pod9 }, false);
    // A plugin without a registered hint queues on everything.
    check(7, ClusterEvent::NodeDelete { node }, true);
}

#[test]
fn a_moved_pod_still_backing_off_goes_to_backoff() {
    let mut q = queue().with_pop_from_backoff(false);
    q.add(pod(1, 0), 0);
    let p = q.pop(0).unwrap();
    q.add_unschedulable(p, PluginSet::of(&[0]), 10 * S);
    q.on_event(ClusterEvent::NodeAdd { node: 0 }, 10 * S + 1);
    assert_eq!(q.location(PodUid(1)), Some(Location::Backoff));
    assert_eq!(q.next_wakeup_nanos(), Some(12 * S));
    assert_eq!(pop_all(&mut q, 12 * S - 1), Vec::<u64>::new());
    assert_eq!(pop_all(&mut q, 12 * S), vec![1]);
}

#[test]
fn events_during_the_cycle_are_replayed_through_the_hints() {
    let check = |event: ClusterEvent, expected: Location| {
        let mut q = queue();
        q.register_hint(0, default_hint_fn("NodePorts").unwrap());
        q.add(pod(1, 0), 0);
        let p = q.pop(0).unwrap();
        q.on_event(event, 0);
        assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), 5 * S), expected, "{event:?}");
    };
    check(ClusterEvent::NodeAdd { node: 1 }, Location::Backoff);
    check(ClusterEvent::AssignedPodDelete { pod: PodUid(4), node: 1 }, Location::Backoff);
    check(ClusterEvent::NodeUpdate { node: 1, change: NodeChange::LABEL }, Location::Unschedulable);
    check(ClusterEvent::AssignedPodAdd { pod: PodUid(4), node: 1 }, Location::Unschedulable);
}

#[test]
fn events_before_the_pop_are_not_replayed() {
    let mut q = queue();
    q.add(pod(1, 0), 0);
    q.add(pod(2, 0), 1);
    let p1 = q.pop(2).unwrap();
    q.on_event(ClusterEvent::NodeAdd { node: 1 }, 2);
    let p2 = q.pop(3).unwrap();
    assert_eq!(q.add_unschedulable(p2, PluginSet::of(&[0]), 4), Location::Unschedulable);
    assert_eq!(q.add_unschedulable(p1, PluginSet::of(&[0]), 4), Location::Backoff);
}

#[test]
fn leftover_unschedulable_pods_flush_after_five_minutes_on_the_30s_ticks() {
    let mut q = queue();
    q.add(pod(1, 0), 0);
    q.add(pod(2, 0), 0);
    let p = q.pop(0).unwrap();
    q.add_unschedulable(p, PluginSet::of(&[0]), S);
    let p = q.pop(0).unwrap();
    q.add_unschedulable(p, PluginSet::of(&[0]), 31 * S);
    let five_min = DEFAULT_MAX_IN_UNSCHEDULABLE_NANOS;
    assert_eq!(q.flush_unschedulable_leftover(S + five_min), 0, "strictly longer than 5 min");
    assert_eq!(q.next_wakeup_nanos(), Some(five_min + 30 * S), "the first 30 s tick after 5 min");
    assert!(q.pop(five_min + 30 * S - 1).is_none());
    assert_eq!(q.pop(five_min + 30 * S).map(|p| p.uid), Some(PodUid(1)));
    assert_eq!(q.location(PodUid(2)), Some(Location::Unschedulable));
    assert_eq!(q.next_wakeup_nanos(), Some(five_min + 60 * S));
}

#[test]
fn gated_pods_stay_out_until_the_gate_is_removed() {
    let mut q = queue();
    assert_eq!(q.add(pod(1, 100).gated(true), 0), Location::Gated);
    q.add(pod(2, 0), 0);
    assert_eq!(pop_all(&mut q, 0), vec![2]);
    assert_eq!(q.lens().gated, 1);
    assert!(!q.remove_gate(PodUid(2)), "pod 2 is not gated");
    assert!(q.remove_gate(PodUid(1)));
    assert_eq!(pop_all(&mut q, 1), vec![1]);
}

#[test]
fn deleted_pods_leave_every_sub_queue() {
    let mut q = queue();
    q.add(pod(1, 0), 0);
    q.add(pod(2, 0).gated(true), 0);
    q.add(pod(3, 0), 0);
    let p3 = q.pop(0).unwrap();
    assert_eq!(p3.uid, PodUid(1));
    q.add_backoff(p3, 0);
    assert_eq!(q.delete(PodUid(1)).map(|p| p.uid), Some(PodUid(1)));
    assert_eq!(q.delete(PodUid(2)).map(|p| p.uid), Some(PodUid(2)));
    assert!(q.delete(PodUid(2)).is_none());
    assert_eq!(q.next_wakeup_nanos(), None);
    assert_eq!(pop_all(&mut q, 100 * S), vec![3]);
    assert_eq!(q.lens(), QueueLens { in_flight: 1, ..QueueLens::default() });
}

#[test]
fn same_inputs_same_order() {
    let run = || {
        let mut q = queue();
        for i in 0..200u64 {
            q.add(pod(i, (i % 3) as i32), i / 10);
        }
        let mut order = Vec::new();
        let mut now = 0;
        while let Some(p) = q.pop(now) {
            order.push(p.uid.0);
            if p.uid.0 % 5 == 0 && p.attempts < 3 {
                q.add_unschedulable(p, PluginSet::of(&[0]), now);
            }
            if order.len() % 50 == 0 {
                q.on_event(ClusterEvent::NodeAdd { node: 0 }, now);
            }
            now += S / 10;
            if q.lens().active == 0 {
                if let Some(t) = q.next_wakeup_nanos() {
                    now = now.max(t);
                    q.flush_unschedulable_leftover(now);
                }
            }
        }
        order
    };
    let a = run();
    assert_eq!(a, run());
    assert!(a.len() > 200, "some pods were retried");
}

#[test]
fn plugin_set_iterates_ids_in_order() {
    let s = PluginSet::of(&[63, 0, 5]);
    assert_eq!(s.iter().collect::<Vec<_>>(), vec![0, 5, 63]);
    assert!(s.contains(5) && !s.contains(6) && !s.contains(200));
    assert!(PluginSet::EMPTY.is_empty());
}

#[test]
fn every_default_plugin_has_a_hint_and_unknown_ones_do_not() {
    for p in DEFAULT_HINT_PLUGINS {
        assert!(default_hint(p, &ClusterEvent::NodeAdd { node: 0 }, PodUid(0)).is_some(), "{p}");
    }
    assert!(default_hint("VolumeBinding", &ClusterEvent::NodeAdd { node: 0 }, PodUid(0)).is_none());
    assert!(default_hint_fn::<()>("Nope").is_none());
}

/// `AddAttemptedPodGroupIfNeeded`: an attempted pod-group entity never waits in unschedulablePods;
/// rejected or failed, it backs off (1 s, then 2 s, ...) and is popped again after its backoff;
/// gated, it waits until the gate is removed.
#[test]
fn an_attempted_group_entity_backs_off_instead_of_waiting_for_an_event() {
    // (error?, gated?) -> location right after the attempt, and whether a pop 3 s later gets it.
    let cases = [
        (false, false, Location::Backoff, true),
        (true, false, Location::Backoff, true),
        (false, true, Location::Gated, false),
    ];
    for (error, gated, at_once, popped_later) in cases {
        let mut q = queue().with_pop_from_backoff(false);
        q.add(pod(7, 0), 0);
        let mut p = q.pop(0).expect("queued");
        p.gated = gated;
        assert_eq!(q.add_attempted(p, error, S / 2), at_once, "error={error} gated={gated}");
        assert_eq!(q.lens().unschedulable, 0);
        assert_eq!(q.lens().in_flight, 0);
        assert!(q.pop(S).is_none(), "still backing off or gated");
        assert_eq!(q.pop(3 * S).is_some(), popped_later, "error={error} gated={gated}");
    }
}

/// Upstream's `Update` keeps a gated pod's timestamp when its gates go (`QueuedPodInfo.Update` swaps
/// the pod only): an ungated pod pops before pods of its priority added after it.
#[test]
fn an_ungated_pod_keeps_its_timestamp() {
    // (gated pod's priority, other pod's priority) -> pop order; the gated pod is added first.
    let cases = [((0, 0), [1, 2]), ((0, 5), [2, 1]), ((5, 0), [1, 2])];
    for ((gated_prio, other_prio), want) in cases {
        let mut q = queue();
        q.add(pod(1, gated_prio).gated(true), S);
        q.add(pod(2, other_prio), 2 * S);
        assert!(q.remove_gate(PodUid(1)));
        assert_eq!(pop_all(&mut q, 10 * S), want, "priorities {gated_prio} {other_prio}");
    }
}

/// Upstream's `Activate`: from unschedulablePods or backoffQ to activeQ; a gated or active pod stays;
/// an in-flight pod comes back to backoffQ even when no hint queues it (`EventForceActivate`).
#[test]
fn activate_moves_pods_as_upstream_does() {
    // (where the pod is when activated) -> (activate's answer, where it is after, after its failure)
    type Case = (&'static str, bool, Option<Location>, Option<Location>);
    let cases: &[Case] = &[
        ("unschedulable", true, Some(Location::Active), None),
        ("backoff", true, Some(Location::Active), None),
        ("gated", false, Some(Location::Gated), None),
        ("active", false, Some(Location::Active), None),
        ("in flight", false, None, Some(Location::Backoff)),
        ("not activated", false, None, Some(Location::Unschedulable)),
    ];
    for &(at, answer, after, after_failure) in cases {
        let mut q = queue();
        q.register_hint(0, default_hint_fn("NodeName").unwrap());
        q.add(pod(1, 0).gated(at == "gated"), 0);
        let mut in_flight = None;
        if at != "gated" && at != "active" {
            let p = q.pop(0).unwrap();
            match at {
                "unschedulable" => assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), 0), Location::Unschedulable),
                "backoff" => assert_eq!(q.add_backoff(p, 0), Location::Backoff),
                _ => in_flight = Some(p),
            }
        }
        if at != "not activated" {
            assert_eq!(q.activate(PodUid(1)), answer, "{at}");
        }
        assert_eq!(q.location(PodUid(1)), after, "{at}");
        if let Some(p) = in_flight {
            q.on_event(ClusterEvent::NodeDelete { node: 0 }, 1);
            assert_eq!(Some(q.add_unschedulable(p, PluginSet::of(&[0]), 2)), after_failure, "{at}");
        }
    }
}

/// Upstream's leftover flush sends the wildcard `EventUnschedulableTimeout` to in-flight pods when
/// it takes any pod (one that moves, or a gated one PreEnqueue keeps): they come back to backoffQ
/// whatever their hints say. A gated pod is taken again 5 min after its last flush, not every 30 s.
#[test]
fn the_leftover_flush_is_a_wildcard_event_for_in_flight_pods() {
    // (what waits since 0 s, when the in-flight pod fails) -> where the in-flight pod goes.
    let cases = [
        ("unschedulable", 5 * S, Location::Unschedulable),
        ("unschedulable", 331 * S, Location::Backoff),
        ("gated", 331 * S, Location::Backoff),
        ("nothing", 331 * S, Location::Unschedulable),
    ];
    for (waiting, fails_at, want) in cases {
        let mut q = queue();
        q.register_hint(0, default_hint_fn("NodeName").unwrap());
        match waiting {
            "unschedulable" => {
                q.add(pod(2, 0), 0);
                let p = q.pop(0).unwrap();
                q.add_unschedulable(p, PluginSet::of(&[0]), 0);
            }
            "gated" => {
                q.add(pod(2, 0).gated(true), 0);
            }
            _ => {}
        }
        q.add(pod(1, 0), S);
        let p = q.pop(S).unwrap();
        q.flush_backoff_completed(fails_at);
        assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), fails_at), want, "{waiting} at {fails_at}");
    }
    // The gated pod was flushed at 330 s: the 360 s flush leaves it; the 660 s one takes it again.
    let mut q = queue();
    q.register_hint(0, default_hint_fn("NodeName").unwrap());
    q.add(pod(2, 0).gated(true), 0);
    q.flush_backoff_completed(330 * S);
    for (at, want) in [(360 * S, Location::Unschedulable), (660 * S, Location::Backoff)] {
        q.add(pod(1, 0), at - S);
        let p = q.pop(at - S).unwrap();
        q.flush_backoff_completed(at);
        assert_eq!(q.add_unschedulable(p, PluginSet::of(&[0]), at), want, "flush at {at}");
        q.delete(PodUid(1));
    }
}
