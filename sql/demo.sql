-- kafkalog demo: SQL over a Kafka partition directory written by Apache Kafka.
-- tests/fixtures/d-jitter-nulls-headers/orders-0: 2000 records in 4 segments, null keys,
-- tombstones, record headers, timestamps that do not grow with offsets.
.print 'Version and codecs:'
SELECT kafka_log_version() AS version;

.print ''
.print 'A named table over the partition directory:'
CREATE VIRTUAL TABLE orders USING kafka_log('tests/fixtures/d-jitter-nulls-headers/orders-0');
SELECT count(*) AS records, min(offset) AS first, max(offset) AS last,
       count(DISTINCT segment) AS segments FROM orders;

.print ''
.print 'Point lookup by offset (segment skip list, then the offset index):'
SELECT offset, timestamp, CAST(key AS TEXT) AS key, CAST(value AS TEXT) AS value, headers
  FROM orders WHERE offset = 1234;

.print ''
.print 'A range of offsets, newest first:'
SELECT offset, timestamp, segment, position FROM orders
 WHERE offset BETWEEN 1000 AND 1005 ORDER BY offset DESC;

.print ''
.print 'Seek by timestamp (time index), then the next records in offset order:'
.print '(the producer''s timestamps here jitter by up to a second, so the first record at or after'
.print ' 1700000010000 is offset 970, before offset 1000 whose timestamp is about that: every row'
.print ' shown has timestamp >= 1700000010000, none is missed, as the time index guarantees)'
SELECT offset, timestamp, CAST(value AS TEXT) AS value FROM orders
 WHERE timestamp >= 1700000010000 ORDER BY offset LIMIT 5;

.print ''
.print 'The tail of the log, instantly:'
SELECT offset, timestamp FROM orders ORDER BY offset DESC LIMIT 3;

.print ''
.print 'Tombstones and null keys:'
SELECT sum(value IS NULL) AS tombstones, sum(key IS NULL) AS null_keys FROM orders;

.print ''
.print 'Records by header name (headers are a JSON array of [name, value]):'
SELECT json_extract(h.value, '$[0]') AS header, count(*) AS records
  FROM orders, json_each(orders.headers) AS h GROUP BY 1 ORDER BY 1;

.print ''
.print 'The plan shows what is pushed down:'
EXPLAIN QUERY PLAN SELECT * FROM orders WHERE offset >= 1500 AND timestamp >= 1700000015000 ORDER BY offset DESC LIMIT 10;

.print ''
.print 'Newest timestamp and the offset for a time are seeks, not scans:'
SELECT max(timestamp) AS newest,
       (SELECT min(offset) FROM orders WHERE timestamp >= 1700000010000) AS first_offset_at_t
  FROM orders;

.print ''
.print 'How far back timestamps go (the jitter), and a window that trusts that bound:'
SELECT kafka_log_max_skew('tests/fixtures/d-jitter-nulls-headers/orders-0') AS max_skew_ms;
SELECT count(*) AS records_in_window
  FROM kafka_log('tests/fixtures/d-jitter-nulls-headers/orders-0')
 WHERE timestamp >= 1700000010000 AND timestamp < 1700000011000
   AND max_skew_ms = kafka_log_max_skew('tests/fixtures/d-jitter-nulls-headers/orders-0');

.print ''
.print 'The table-valued form, on another partition (every codec in one log):'
SELECT compression, count(*) AS records, sum(length(value)) AS value_bytes
  FROM kafka_log('tests/fixtures/j-mixed-codecs/orders-0') GROUP BY 1 ORDER BY 1;

.print ''
.print 'Integrity check: a sound partition has no findings (0 problems):'
SELECT count(*) AS problems FROM kafka_log_check('tests/fixtures/d-jitter-nulls-headers/orders-0');
.print 'A copy of a live broker: its active segment has preallocated index slots (info, not damage):'
SELECT segment, kind, severity, position FROM kafka_log_check('tests/fixtures/e-live-preallocated/orders-0');

.print ''
.print 'A whole log directory (tests/fixtures/broker: five partitions and checkpoint files):'
SELECT topic, partition, log_start_offset, log_end_offset, high_watermark, segments, bytes
  FROM kafka_partitions('tests/fixtures/broker');
SELECT topic, count(*) AS records FROM kafka_log('tests/fixtures/broker') GROUP BY 1 ORDER BY 1;

.print ''
.print 'One record by topic, partition and offset (only that partition is opened):'
SELECT topic, partition, offset, key_type, key FROM kafka_log('tests/fixtures/broker')
 WHERE topic = 'orders' AND partition = 1 AND offset = 1234 AND key_type = 'text';

.print ''
.print 'Transactions: every data record, and what a read_committed consumer sees'
.print '(no aborted records, nothing past the high watermark: 1200 in replication-offset-checkpoint):'
SELECT count(*) AS read_uncommitted,
       (SELECT count(*) FROM kafka_log('tests/fixtures/broker')
         WHERE topic = 'payments' AND isolation = 'read_committed') AS read_committed
  FROM kafka_log('tests/fixtures/broker') WHERE topic = 'payments';

.print ''
.print 'Consumer lag: committed offsets from __consumer_offsets, joined with the partitions:'
SELECT o.group_id, o.topic, o.partition, o.committed_offset, p.log_end_offset - o.committed_offset AS lag
  FROM kafka_consumer_offsets('tests/fixtures/broker') o
  JOIN kafka_partitions('tests/fixtures/broker') p USING (topic, partition);

.print ''
.print 'Kafka''s own state: a read_committed consumer of orders is stuck. The last stable offsets stand'
.print 'below the log ends:'
SELECT topic, partition, log_end_offset, last_stable_offset,
       log_end_offset - last_stable_offset AS unreadable
  FROM kafka_partitions('tests/fixtures/txn-broker') WHERE topic = 'orders';
.print 'The open transactions that pin them and that the coordinator no longer accounts for'
.print '(kafka-transactions.sh find-hanging, offline):'
SELECT topic, partition, producer_id, producer_epoch, start_offset, duration_ms / 60000 AS minutes,
       transactional_id, reason, lso_lag
  FROM kafka_hanging_transactions('tests/fixtures/txn-broker');
.print 'Producer 3000''s transactional id and its history in __transaction_state: fenced, aborted, moved on'
.print 'to producer 3001, the ABORT marker never written to orders-0:'
SELECT record_offset, state, producer_id, previous_producer_id AS prev, next_producer_id AS next,
       partitions
  FROM kafka_transaction_log('tests/fixtures/txn-broker')
 WHERE transactional_id IN (SELECT transactional_id FROM kafka_transaction_log('tests/fixtures/txn-broker')
                             WHERE producer_id = 3000);
.print 'The partition of __transaction_state (3 partitions here, 50 by default) that holds an id:'
SELECT kafka_coordinator_partition('orders-app', 3) AS here, kafka_coordinator_partition('orders-app', 50) AS default_50;

.print ''
.print 'Writing: a new log in /tmp/kafkalog-demo/events-0, in the format Kafka writes: a transaction of'
.print 'three records (one batch), a rolled-back one (nothing of it remains), retention below offset 1'
.print '(the log start moves; the batch stays on disk until its whole segment is below it):'
CREATE VIRTUAL TABLE events USING kafka_log('/tmp/kafkalog-demo/events-0', mode='create',
    compression='zstd');
BEGIN;
INSERT INTO events(key, value, timestamp, headers) VALUES
  ('user-1', '{"click": 3}', 1732924800000, '[["trace","ab"]]'),
  ('user-2', '{"click": 1}', 1732924800450, NULL),
  (NULL, NULL, 1732924801000, NULL);
COMMIT;
BEGIN;
INSERT INTO events(value) VALUES ('never seen');
ROLLBACK;
DELETE FROM events WHERE offset < 1;
SELECT offset, timestamp, key, value, headers, compression FROM events;
SELECT base_offset, last_offset, record_count, compression, size FROM kafka_batches('/tmp/kafkalog-demo/events-0');

.print ''
.print 'Avro and Protobuf values decoded offline with the Schema Registry''s own topic (_schemas-0 beside them):'
SELECT id, subject, version, schema_type, deleted FROM kafka_schemas('tests/fixtures/registry');
SELECT offset, json_extract(value, '$.customer') AS customer, json_extract(value, '$.amount') AS amount,
       json_extract(value, '$.status') AS status, json_array_length(value, '$.items') AS items
  FROM kafka_log('tests/fixtures/registry/orders-0') WHERE value_type = 'confluent';
SELECT json_extract(key, '$') AS key, json_extract(value, '$.amount') AS amount,
       json_extract(value, '$.pid') AS pid, json_extract(value, '$.ratio') AS ratio
  FROM kafka_log('tests/fixtures/registry/payments-0')
 WHERE key_type = 'confluent' AND value_type = 'confluent';
.print 'Protobuf values (two schema versions, one importing shop/common.proto; message indexes [0], [0,0], [1]):'
SELECT offset, json_extract(value, '$.page') AS page, json_extract(value, '$.kind') AS kind,
       json_extract(value, '$.counts') AS counts, value
  FROM kafka_log('tests/fixtures/registry/clicks-0') WHERE value_type = 'confluent';

.print ''
.print 'Work done by these queries (counters, not timings):'
SELECT key AS counter, value FROM json_each(kafka_log_stats());
