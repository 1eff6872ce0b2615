package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.operators.RescaleSupport.Changelog;
import io.ferrystream.ferry.operators.RescaleSupport.Planned;

import static io.ferrystream.ferry.operators.RescaleSupport.MAX_PARALLELISM;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.jobgraph.OperatorID;
import org.apache.flink.runtime.metrics.groups.InternalOperatorMetricGroup;
import org.apache.flink.runtime.metrics.util.InterceptingOperatorMetricGroup;
import org.apache.flink.runtime.metrics.util.InterceptingTaskMetricGroup;
import org.apache.flink.runtime.operators.testutils.MockEnvironment;
import org.apache.flink.runtime.operators.testutils.MockEnvironmentBuilder;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.InstantiationUtil;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The operator's metrics, registered in Flink's operator metric group, follow the native state. */
class OperatorMetricsTest {

    /** A harness whose operator registers its metrics in {@code metrics}. */
    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(
            Planned p, InterceptingOperatorMetricGroup metrics, OperatorSubtaskState state) throws Exception {
        InterceptingTaskMetricGroup task = new InterceptingTaskMetricGroup() {
            @Override
            public InternalOperatorMetricGroup getOrAddOperator(OperatorID id, String name, Map<String, String> variables) {
                return metrics;
            }
        };
        MockEnvironment env = new MockEnvironmentBuilder()
                .setMaxParallelism(MAX_PARALLELISM)
                .setParallelism(1)
                .setSubtaskIndex(0)
                .setMetricGroup(task)
                .build();
        var h = new KeyedOneInputStreamOperatorTestHarness<>(
                InstantiationUtil.clone(p.operator()), p.keySelector(), p.keyType(), env);
        h.setup(new RowDataSerializer(p.outputType()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    @SuppressWarnings("unchecked")
    static long gauge(InterceptingOperatorMetricGroup metrics, String name) {
        return ((Gauge<Long>) metrics.get(name)).getValue();
    }

    @Test
    void gaugesFollowTheNativeState() throws Exception {
        Planned p = RescaleSupport.plan(RescaleSupport.AGGS, true, 64);
        InterceptingOperatorMetricGroup metrics = new InterceptingOperatorMetricGroup();
        var h = harness(p, metrics, null);
        assertEquals(0, gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_KEYS));

        Changelog c = new Changelog(7, 1000);
        List<GenericRowData> sent = new ArrayList<>();
        long bytes300 = 0;
        for (int k = 0; k < 600; k++) {
            for (int copy = 0; copy < 2; copy++) {
                GenericRowData row = c.fresh(c.key(k), RowKind.INSERT);
                sent.add(row);
                h.processElement(new StreamRecord<>(row));
                if (k == 299 && copy == 1) {
                    h.prepareSnapshotPreBarrier(1); // processes the partial batch
                    assertEquals(300, gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_KEYS));
                    bytes300 = gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_BYTES);
                }
            }
        }
        h.prepareSnapshotPreBarrier(2);
        assertEquals(600, gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_KEYS));
        long bytes600 = gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_BYTES);
        assertTrue(bytes300 > 0 && bytes600 > bytes300, "state bytes " + bytes300 + ", then " + bytes600);

        // Deleting both rows of keys 0..99 removes those groups.
        for (GenericRowData row : sent.subList(0, 200)) {
            h.processElement(new StreamRecord<>(Changelog.as(row, RowKind.DELETE)));
        }
        h.prepareSnapshotPreBarrier(3);
        assertEquals(500, gauge(metrics, FerryGroupAggregateOperator.METRIC_STATE_KEYS));
        Counter batches = (Counter) metrics.get(FerryGroupAggregateOperator.METRIC_NATIVE_BATCHES);
        // 1400 rows at batch size 64, cut at the three barriers: 23 full batches and 3 partial ones
        assertEquals(1400 / 64 + 3, batches.getCount());

        // A restored operator reports its restored state from the start.
        OperatorSubtaskState state = h.snapshot(4, 4);
        h.close();
        InterceptingOperatorMetricGroup restoredMetrics = new InterceptingOperatorMetricGroup();
        var restored = harness(p, restoredMetrics, state);
        assertEquals(500, gauge(restoredMetrics, FerryGroupAggregateOperator.METRIC_STATE_KEYS));
        assertTrue(gauge(restoredMetrics, FerryGroupAggregateOperator.METRIC_STATE_BYTES) > 0);
        assertEquals(0, ((Counter) restoredMetrics.get(FerryGroupAggregateOperator.METRIC_NATIVE_BATCHES)).getCount());
        restored.close();
    }
}
