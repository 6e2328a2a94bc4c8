/**
 * Every groupwire_* metric deploy/alerts.yml may name: what the operations endpoint's /metrics exports.
 * test/deploy-files.test.ts checks the alerts against it; a scrape test can check it against a real
 * /metrics (imported from here, not from the test file, which would run that file's tests too).
 */
export const EXPORTED_METRICS = [
  'groupwire_chat_lag_messages', 'groupwire_chat_seconds_since_last_message', 'groupwire_chat_socket_state',
  'groupwire_chat_reconnects_total', 'groupwire_plugin_queue_depth', 'groupwire_plugin_connected',
  'groupwire_plugin_errors_total', 'groupwire_plugin_timeouts_total', 'groupwire_rest_calls_total',
  'groupwire_bot_ready', 'groupwire_ready', 'groupwire_backlog_behind',
] as const;

/** Those a worker of several adds (bots.yaml coordination:): test/workers-share.test.ts finds them in a worker's scrape. */
export const WORKER_METRICS = ['groupwire_redis_up', 'groupwire_unit_holder'] as const;
