-- Inbox rows a worker of the release with migrations 001 to 013 stored (written by it, then
-- frozen): a create, which keeps its decision and what its save learned, and a command of
-- another kind, which keeps its result as sent.
INSERT INTO memory_worker.processed_commands (command_id, kind, workspace_id, status, result, decision, facts)
VALUES
    ('release-013-create', 'create', '810000000000000001', NULL, NULL,
     '{"cap": 50, "proxy": false, "scope": "server", "notice": {"hidden": false, "verbosity": "verbose", "source_url": null, "thought_log_skipped": null, "thought_log_channel_id": null, "conversation_channel_id": "120000000000000001"}, "content": "{user} likes green tea", "decided": "save", "user_id": null, "owner_id": "810000000000000001", "blocked_by": ["decay_off", "retrieval_unavailable", "no_embedding_credentials", "no_embedding_model"], "decay_days": 30, "lineage_id": 4242, "persona_id": 1, "teacher_id": "200000000000000001", "tool_scope": "server_wide", "persona_name": "Tomori", "target_label": null, "metric_event_id": null, "target_blacklisted": false, "personalization_enabled": true}',
     '{"outcome": "saved", "memory_id": 7}'),
    ('release-013-reinforce', 'reinforce', '810000000000000001', 'reinforced',
     '{"command_id":"release-013-reinforce","success":true,"data":{"status":"reinforced","memory_id":7}}', NULL, NULL);
