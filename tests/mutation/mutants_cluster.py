"""Named mutants of what ``kubesim serve`` does as a cluster: the scheduler, the kubelet, the
workload and endpoints controllers, the garbage collector, admission, tokens and field
ownership."""

KUBELET = "tests/unit/test_kubelet.py"
WORKLOADS = "tests/unit/test_workloads.py"
ENDPOINTS = "tests/unit/test_endpoints.py"
STATEFULSETS = "tests/unit/test_statefulsets.py"
DAEMONSETS = "tests/unit/test_daemonsets.py"
ROOT_CA = "tests/unit/test_root_ca.py"

MUTANTS = [
    dict(
        name="scheduler-ignores-node-selector",
        path="kubesim/cluster/kubelet.py",
        old="any(labels.get(k) != v for k, v in selector.items())",
        new="False",
        tests=[f"{KUBELET}::test_a_pod_no_node_fits_says_why_once_and_is_bound_when_a_node_fits"],
        why="a pod is bound to a node its nodeSelector does not allow",
    ),
    dict(
        name="scheduler-packs-the-busiest-node",
        path="kubesim/cluster/kubelet.py",
        old="chosen = min(fits, key=lambda name: (load[name], name))",
        new="chosen = max(fits, key=lambda name: (load[name], name))",
        tests=[f"{KUBELET}::test_the_scheduler_spreads_pods_over_the_nodes_with_the_fewest"],
        why="new pods pile onto the node that already runs the most",
    ),
    dict(
        name="kubelet-starts-a-replaced-pod-early",
        path="kubesim/cluster/kubelet.py",
        old="if self._starting.get(key) != uid:",
        new="if key not in self._starting:",
        tests=[f"{KUBELET}::test_a_pod_deleted_or_replaced_before_it_starts_is_not_started_twice"],
        why="a pod created again under a deleted one's name starts on the old one's timer",
    ),
    dict(
        name="collector-ignores-other-owners",
        path="kubesim/cluster/workloads.py",
        old='if any(r.get("uid") != owner_uid and self._exists(r, key[0]) for r in refs):',
        new="if False:",
        tests=[
            f"{WORKLOADS}::test_deleting_an_owner_deletes_what_it_owns_unless_another_owner_remains"
        ],
        why="an object is deleted with one owner while another owner still exists",
    ),
    dict(
        name="replica-set-deletes-ready-pods-first",
        path="kubesim/cluster/workloads.py",
        old="                    is_ready(pod),\n",
        new="                    not is_ready(pod),\n",
        tests=[f"{WORKLOADS}::test_scaling_creates_and_deletes_pods_the_not_ready_first"],
        why="scaling down kills serving pods before ones that are not ready",
    ),
    dict(
        name="endpoints-list-unready-pods-as-ready",
        path="kubesim/cluster/endpoints.py",
        old="(ready if _ready(pod) else not_ready).append(address)",
        new="ready.append(address)",
        tests=[f"{ENDPOINTS}::test_readiness_relabelling_and_deletion_move_the_addresses"],
        why="a pod that is not ready receives traffic",
    ),
    dict(
        name="pods-deleted-without-grace",
        path="kubesim/apiserver/deletion.py",
        old="period = kubelets.grace_period(current.obj, grace)",
        new="period = 0",
        tests=[f"{KUBELET}::test_a_running_pod_is_deleted_gracefully_by_its_kubelet"],
        why="a running pod vanishes at once instead of terminating through its grace period",
    ),
    dict(
        name="terminating-endpoints-not-marked",
        path="kubesim/cluster/endpoints.py",
        old='"terminating": terminating,',
        new='"terminating": False,',
        tests=[
            f"{ENDPOINTS}::test_a_terminating_ready_pod_keeps_serving_until_its_containers_stop"
        ],
        why="an endpoint whose pod is going away looks like any other",
    ),
    dict(
        name="statefulset-makes-pods-out-of-order",
        path="kubesim/cluster/statefulsets.py",
        old="elif ordered and (deleting(pod) or not is_ready(pod)):",
        new="elif False:",
        tests=[
            f"{STATEFULSETS}::test_ordered_pods_are_made_one_at_a_time_each_once_the_one_before_is_ready"
        ],
        why="OrderedReady makes a pod before the one below it is ready",
    ),
    dict(
        name="statefulset-rolls-from-the-lowest-ordinal",
        path="kubesim/cluster/statefulsets.py",
        old="for ordinal in sorted(wanted, reverse=True):",
        new="for ordinal in sorted(wanted):",
        tests=[
            f"{STATEFULSETS}::test_a_new_template_rolls_out_from_the_highest_ordinal_to_a_new_revision"
        ],
        why="a rolling update replaces pod 0 first, as no StatefulSet does",
    ),
    dict(
        name="daemonset-ignores-the-node-selector",
        path="kubesim/cluster/daemonsets.py",
        old="if deleting(stored.obj) or not fits_node(probe, stored.obj):",
        new="if deleting(stored.obj):",
        tests=[f"{DAEMONSETS}::test_the_node_selector_picks_nodes_and_a_relabel_moves_the_pods"],
        why="a daemon pod runs on every node, whatever the template's nodeSelector",
    ),
    dict(
        name="scheduler-ignores-required-affinity",
        path="kubesim/cluster/kubelet.py",
        old='terms = [t for t in required.get("nodeSelectorTerms") or [] if isinstance(t, dict)]',
        new="terms = []",
        tests=[f"{DAEMONSETS}::test_required_node_affinity_decides_where_a_pod_fits"],
        why="a pod pinned to one node by affinity may be bound to another",
    ),
    dict(
        name="token-review-trusts-any-signature",
        path="kubesim/apiserver/reviews.py",
        old="if not hmac.compare_digest(signature, expected) or not isinstance(claims, dict):",
        new="if not isinstance(claims, dict):",
        tests=[
            "tests/unit/test_reviews.py::"
            "test_a_token_review_knows_the_servers_tokens_until_they_expire_or_the_account_goes"
        ],
        why="a token another server signed, or a forged one, authenticates",
    ),
    dict(
        name="default-tolerations-ignore-what-the-pod-tolerates",
        path="kubesim/admission/tolerations.py",
        old='t.get("key") in (key, "", None) and t.get("effect") in ("NoExecute", "", None)',
        new="False",
        tests=[
            "tests/unit/test_tolerations.py::"
            "test_a_taint_the_pod_already_tolerates_gets_no_second_toleration"
        ],
        why="a pod that tolerates every taint gets the default tolerations on top",
    ),
    dict(
        name="apply-removes-the-map-it-applies-into",
        path="kubesim/apiserver/managed_fields.py",
        old="kept = {path[:end] for path in applying | others for end in range(1, len(path) + 1)}",
        new="kept = applying | others",
        tests=[
            "tests/conformance/test_server_side_apply.py::"
            "test_keys_applied_into_a_map_the_manager_applied_empty_before_are_kept"
        ],
        why="keys applied into a map the manager applied empty before are dropped with the map",
    ),
    dict(
        name="metrics-list-pods-that-do-not-run",
        path="kubesim/cluster/metrics.py",
        old='if _running(pod) and (namespace is None or pod["metadata"]["namespace"] == namespace)',
        new='if (namespace is None or pod["metadata"]["namespace"] == namespace)',
        tests=[
            "tests/unit/test_metrics.py::"
            "test_running_pods_have_a_usage_per_container_and_pending_ones_none"
        ],
        why="a pod that never started has a usage, as metrics-server never reports",
    ),
    dict(
        name="eviction-ignores-the-budget",
        path="kubesim/apiserver/eviction.py",
        old="if allowed == 0:\n        raise _too_many(",
        new="if False:\n        raise _too_many(",
        tests=[
            "tests/unit/test_disruption.py::"
            "test_an_eviction_spends_a_disruption_and_the_next_one_waits_for_the_replacement"
        ],
        why="a drain evicts the last pod a budget protects",
    ),
    dict(
        name="scheduler-binds-to-cordoned-nodes",
        path="kubesim/cluster/kubelet.py",
        old='if not _dict(node.get("spec")).get("unschedulable"):',
        new="if True:",
        tests=[f"{KUBELET}::test_a_cordoned_node_gets_only_pods_that_tolerate_it_until_uncordoned"],
        why="a drained node gets the replacements of the pods it was drained of",
    ),
    dict(
        name="metadata-watch-sends-whole-objects",
        path="kubesim/wire/routes.py",
        old="""        return replace(
            response, body=partial_metadata.PartialMetadataWatchStream(body, conversion_asked)
        )""",
        new="        return response",
        tests=[
            "tests/conformance/test_partial_metadata.py::"
            "test_watch_events_carry_metadata_and_a_list_conversion_leaves_them_whole"
        ],
        why="a metadata informer's watch receives whole objects, as if it had asked for them",
    ),
    dict(
        name="secret-string-data-is-stored",
        path="kubesim/apiserver/defaults.py",
        old='string_data = obj.pop("stringData", None)',
        new='string_data = obj.get("stringData")',
        tests=[
            "tests/unit/test_pod_spec_defaults.py::"
            "test_string_data_is_merged_into_data_and_never_stored"
        ],
        why="a Secret keeps its write-only stringData, which no cluster stores",
    ),
    dict(
        name="service-cluster-ip-may-change",
        path="kubesim/apiserver/services.py",
        old="if old_ips and new_ips and isinstance(new_ips, list) and new_ips[0] != old_ips[0]:",
        new="if False:",
        tests=["tests/unit/test_services.py::test_the_primary_address_may_not_change_once_set"],
        why="a Service's address changes under its clients",
    ),
    dict(
        name="apply-forgives-every-manager",
        path="kubesim/apiserver/managed_fields.py",
        old="if manager == KUBECTL and live is not None else set()",
        new="if live is not None else set()",
        tests=[
            "tests/conformance/test_server_side_apply.py::"
            "test_kubectl_takes_over_the_fields_its_client_side_apply_last_applied"
        ],
        why="any manager silently takes over fields kubectl applied client-side",
    ),
    dict(
        name="struct-decoding-takes-a-string-for-a-map",
        path="kubesim/apiserver/struct_decoding.py",
        old='"map": isinstance(value, dict),',
        new='"map": True,',
        tests=[
            "tests/conformance/test_struct_decoding.py::"
            "test_a_strategic_merge_patch_that_does_not_decode_is_422_on_patch"
        ],
        why="a patch stores labels that are a string, which no Go struct can hold",
    ),
    dict(
        name="crd-serves-its-storage-version-alone",
        path="kubesim/apiserver/crds.py",
        old="    return [stored, *views]",
        new="    return [stored]",
        tests=[
            "tests/conformance/test_crds.py::"
            "test_every_served_version_is_served_and_objects_differ_in_api_version_alone"
        ],
        why="an operator using another served version of its CRD gets 404",
    ),
    dict(
        name="deprecated-versions-do-not-warn",
        path="kubesim/wire/routes.py",
        old="    deprecation = (target.view or target.resource).deprecation_warning\n",
        new="    deprecation = None\n",
        tests=["tests/conformance/test_crds.py::test_deprecated_built_in_versions_warn"],
        why="kubectl --warnings-as-errors passes on a deprecated API",
    ),
    dict(
        name="priority-class-without-preemption-policy",
        path="kubesim/apiserver/defaults.py",
        old='    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")\n',
        new="",
        tests=[
            "tests/unit/test_control_plane.py::"
            "test_priority_classes_are_defaulted_as_decoding_defaults_them"
        ],
        why="kubectl describe priorityclasses panics on a class without a preemption policy",
    ),
    dict(
        name="openapi-v2-json-refused",
        path="kubesim/wire/openapi_v2.py",
        old='        if media in ("*/*", "application/*", JSON_TYPE):\n',
        new="        if False:\n",
        tests=["tests/unit/test_openapi.py::test_v2_is_swagger_json_by_default"],
        why="tools that read the Swagger document get 406",
    ),
    dict(
        name="node-lifecycle-ignores-lease-renewals",
        path="kubesim/cluster/node_lifecycle.py",
        old='            self._observe(event.key[1], ("lease", renewed))',
        new="            pass",
        tests=[
            "tests/unit/test_node_lifecycle.py::"
            "test_heartbeats_and_lease_renewals_keep_a_node_healthy"
        ],
        why="a node whose kubelet renews its Lease is declared unreachable",
    ),
    dict(
        name="taint-eviction-ignores-toleration-seconds",
        path="kubesim/cluster/node_lifecycle.py",
        old="        wait = max(0, min(int(s) for s in seconds if s is not None))",
        new="        wait = 0",
        tests=[
            "tests/unit/test_node_lifecycle.py::"
            "test_pods_are_evicted_when_they_stop_tolerating_the_unreachable_node"
        ],
        why="pods that tolerate an unreachable node for five minutes are evicted at once",
    ),
    dict(
        name="scheduler-ignores-taints",
        path="kubesim/cluster/kubelet.py",
        old="            taint = untolerated_taint(pod, node)",
        new="            taint = None",
        tests=[
            "tests/unit/test_node_lifecycle.py::"
            "test_the_scheduler_places_no_pod_on_a_node_whose_taint_it_does_not_tolerate"
        ],
        why="pods land on a node whose taint they do not tolerate",
    ),
    dict(
        name="impersonation-headers-ignored",
        path="kubesim/wire/routes.py",
        old="    return reviews.impersonated(",
        new="    return user or reviews.impersonated(",
        tests=[
            "tests/unit/test_reviews.py::test_impersonation_headers_make_the_request_another_user"
        ],
        why="kubectl --as acts as the administrator, so an authorization test passes for anyone",
    ),
    dict(
        name="scale-dry-run-stored",
        path="kubesim/apiserver/registry.py",
        old="stored = self.update(resource, namespace, name, wanted, None, dry_run=dry_run)",
        new="stored = self.update(resource, namespace, name, wanted, None)",
        tests=[
            "tests/conformance/test_write_verbs.py::"
            "test_a_dry_run_scale_answers_the_new_scale_and_stores_nothing"
        ],
        why="kubectl scale --dry-run=server scales the workload",
    ),
    dict(
        name="workload-selector-not-checked",
        path="kubesim/apiserver/validation.py",
        old="    if not parsed.requirements() or parsed.matches(labels):",
        new="    if True:",
        tests=[
            "tests/conformance/test_write_verbs.py::"
            "test_apps_workloads_need_a_selector_that_selects_their_template"
        ],
        why="a Deployment whose selector misses its own pods is accepted and never converges",
    ),
    dict(
        name="orphan-policy-cascades",
        path="kubesim/apiserver/propagation.py",
        old="return kept + [ORPHAN_FINALIZER] * orphan + [FOREGROUND_FINALIZER] * foreground",
        new="return kept + [FOREGROUND_FINALIZER] * foreground",
        tests=[
            "tests/unit/test_workloads.py::"
            "test_an_orphaning_delete_leaves_the_dependents_without_the_owner"
        ],
        why="kubectl delete --cascade=orphan deletes the owner's ReplicaSets and pods",
    ),
    dict(
        name="foreground-delete-does-not-wait",
        path="kubesim/cluster/workloads.py",
        old="if not any(self._blocks(dependent, uid) for dependent in dependents):",
        new="if True:",
        tests=[
            "tests/unit/test_workloads.py::"
            "test_a_foreground_delete_keeps_the_owner_until_its_blocking_dependents_are_gone"
        ],
        why="a foreground delete lets the owner go before the dependents that block it",
    ),
    dict(
        name="rollback-template-zero-values-differ",
        path="kubesim/cluster/workloads.py",
        old='return {k: v for k, v in kept.items() if v not in (None, False, 0, "", {}, [])}',
        new="return kept",
        tests=[
            "tests/unit/test_workloads.py::"
            "test_a_rollback_makes_the_old_replica_set_current_again_with_its_revisions_kept"
        ],
        why="kubectl rollout undo makes a third ReplicaSet instead of reusing the old one",
    ),
    dict(
        name="daemonset-ignores-no-execute",
        path="kubesim/cluster/daemonsets.py",
        old='if untolerated_taint(probe, stored.obj, ("NoExecute",)) is None:',
        new="if True:",
        tests=[
            "tests/unit/test_daemonsets.py::"
            "test_untolerated_taints_keep_daemon_pods_off_and_no_execute_ones_evict_them"
        ],
        why="a daemon pod stays on a node whose NoExecute taint it does not tolerate",
    ),
    dict(
        name="collector-leaves-dangling-references",
        path="kubesim/cluster/workloads.py",
        old="            self._drop_owner((resource, key), owner_uid)\n            return",
        new="            return",
        tests=[
            f"{WORKLOADS}::test_deleting_an_owner_deletes_what_it_owns_unless_another_owner_remains"
        ],
        why="an object another owner keeps still names the owner that is gone",
    ),
    dict(
        name="root-ca-never-recreated",
        path="kubesim/cluster/root_ca.py",
        old="    elif (\n        event.key[1] == CONFIG_MAP_NAME",
        new="    elif (\n        False",
        tests=[f"{ROOT_CA}::test_a_deleted_config_map_is_made_again"],
        why="a deleted kube-root-ca.crt stays deleted, where the publisher makes it again",
    ),
    dict(
        name="root-ca-changes-left-alone",
        path="kubesim/cluster/root_ca.py",
        old='if obj.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):',
        new="if True:",
        tests=[
            f"{ROOT_CA}::test_a_changed_bundle_or_description_is_put_back_and_other_changes_stay"
        ],
        why="a client's change to the published bundle stays, where the publisher reverts it",
    ),
    dict(
        name="root-ca-written-into-terminating-namespace",
        path="kubesim/cluster/root_ca.py",
        old='if stored is None or stored.obj["metadata"].get("deletionTimestamp"):',
        new="if stored is None:",
        tests=[f"{ROOT_CA}::test_a_namespace_being_deleted_gets_no_new_config_map"],
        why="the publisher writes into a namespace being deleted (its create would be refused)",
    ),
    dict(
        name="controller-refusal-not-retried",
        path="kubesim/cluster/retries.py",
        old="        server.clock.call_later(delay, again)",
        new="        pass",
        tests=[
            f"{ROOT_CA}::test_a_create_a_quota_refuses_is_tried_again_and_the_client_is_not_told"
        ],
        why="a controller's write refused by a quota is never made, where a workqueue retries it",
    ),
    dict(
        name="controller-refusal-reaches-the-client",
        path="kubesim/cluster/retries.py",
        old="    except st.StatusError as exc:",
        new="    except ZeroDivisionError as exc:",
        tests=[
            f"{ROOT_CA}::test_a_create_a_quota_refuses_is_tried_again_and_the_client_is_not_told"
        ],
        why="a client's delete is answered 403 because the controller it set off was refused",
    ),
    dict(
        name="token-mounted-despite-automount-false",
        path="kubesim/admission/service_accounts.py",
        old="    if _automounts(account, spec):",
        new="    if True:",
        tests=[
            "tests/unit/test_service_accounts.py::"
            "test_automount_service_account_token_the_pod_says_wins_over_the_account"
        ],
        why="a pod that asked for no token gets one mounted",
    ),
    dict(
        name="token-mount-over-a-container-s-own",
        path="kubesim/admission/service_accounts.py",
        old="if isinstance(container, dict) and not _mounts_token_path(container):",
        new="if isinstance(container, dict):",
        tests=[
            "tests/unit/test_service_accounts.py::"
            "test_a_container_with_its_own_mount_at_the_token_path_and_a_volume_of_the_prefix_are_kept"
        ],
        why="a container's own mount at the token path gets a second mount there",
    ),
    dict(
        name="create-takes-a-sent-resource-version",
        path="kubesim/apiserver/registry.py",
        old="        if not dry_run and _nonzero_resource_version(sent_rv):",
        new="        if False:",
        tests=[
            "tests/conformance/test_objects.py::"
            "test_a_create_with_a_resource_version_is_refused_as_etcd3_refuses_it"
        ],
        why="a client that re-creates an object it read passes here and fails on a cluster",
    ),
    dict(
        name="created-resource-version-last-in-metadata",
        path="kubesim/apiserver/registry.py",
        old=(
            '        meta["resourceVersion"] = sent_rv if dry_run and isinstance(sent_rv, str)'
            ' else ""\n'
        ),
        new="",
        tests=[
            "tests/conformance/test_objects.py::"
            "test_a_created_object_has_its_metadata_in_go_field_order"
        ],
        why="a created object's metadata is not in ObjectMeta's order on the wire",
    ),
    dict(
        name="dry-run-without-managed-fields",
        path="kubesim/apiserver/registry.py",
        old="        if self.server.field_manager is not None and event_type != DELETED:",
        new=(
            "        if self.server.field_manager is not None and event_type != DELETED"
            " and not dry_run:"
        ),
        tests=[
            "tests/conformance/test_write_verbs.py::"
            "test_dry_run_writes_answer_like_writes_and_store_nothing"
        ],
        why="a dry-run answer lacks the managedFields the write would store",
    ),
    dict(
        name="discovery-groups-alphabetical",
        path="kubesim/wire/discovery.py",
        old="    return sorted(_groups(resources).items(), key=order)",
        new="    return sorted(_groups(resources).items())",
        tests=[
            "tests/unit/test_api_services.py::"
            "test_discovery_lists_groups_by_priority_with_the_aggregator_s_own_group_first"
        ],
        why="discovery lists groups alphabetically, not in the aggregator's priority order",
    ),
    dict(
        name="crd-apiservice-left-behind",
        path="kubesim/cluster/api_services.py",
        old="    for name in sorted(set(registered) - names):",
        new="    for name in []:",
        tests=[
            "tests/unit/test_api_services.py::"
            "test_crds_get_an_apiservice_per_served_group_version_while_they_serve_it"
        ],
        why="a deleted CRD's group-version stays registered as an APIService",
    ),
    dict(
        name="local-apiservice-not-available",
        path="kubesim/apiserver/api_groups.py",
        old='    if isinstance(spec, dict) and spec.get("service") is None:',
        new="    if False:",
        tests=[
            "tests/unit/test_api_services.py::"
            "test_the_control_plane_registers_one_local_apiservice_per_built_in_group_version"
        ],
        why="local APIServices have no Available condition, so a client waits for them forever",
    ),
    dict(
        name="apiservice-name-not-checked",
        path="kubesim/apiserver/validation.py",
        old="    if isinstance(name, str) and name and name != wanted:",
        new="    if False:",
        tests=[
            "tests/unit/test_api_services.py::"
            "test_a_created_apiservice_is_validated_and_its_status_is_the_server_s"
        ],
        why="an APIService named other than version.group is accepted",
    ),
    {
        "name": "job-replaces-a-failed-pod-at-once",
        "path": "kubesim/cluster/jobs.py",
        "old": "        return until if now < until else None\n",
        "new": "        return None\n",
        "tests": [
            "tests/unit/test_jobs.py::test_a_failed_pod_is_replaced_after_a_back_off_that_doubles",
        ],
        "why": "a Job between a failed pod and its retry (no active pod) would never be seen",
    },
]
