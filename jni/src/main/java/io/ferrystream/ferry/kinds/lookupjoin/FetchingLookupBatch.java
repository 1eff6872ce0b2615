package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.planner.FlinkFields;

import org.apache.flink.api.common.functions.DefaultOpenContext;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.functions.util.FunctionUtils;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.runtime.collector.ListenableCollector;
import org.apache.flink.table.runtime.generated.FilterCondition;
import org.apache.flink.table.runtime.generated.GeneratedCollector;
import org.apache.flink.table.runtime.generated.GeneratedFunction;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinRunner;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinWithCalcRunner;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A batch with one batched fetch instead of one connector call per probe row: pre-filter → key
 * rows → {@link BatchFetcher#fetch} once → per probe row in arrival order: calc on the temporal
 * table → collector (the residual join condition) → LEFT padding.
 *
 * <p>Every step but the fetch is Flink's own generated code, taken from Flink's sync runner
 * ({@code generatedPreFilterCondition}, {@code generatedCalc}, {@code generatedCollector}, {@code
 * isLeftOuterJoin}, {@code tableFieldsCount}); the keys are built as Flink's fetcher builds them
 * ({@link LookupKeys}: a NULL key is not looked up). So the output equals Flink's runner whenever
 * the fetcher answers each key as the connector's {@code lookup} would. Flink's generated fetcher
 * (and with it the connector's lookup function) is neither opened nor called.
 */
public final class FetchingLookupBatch implements LookupJoinBatch {
    private static final long serialVersionUID = 1L;

    private final GeneratedFunction<FilterCondition> generatedPreFilter;
    @Nullable private final GeneratedFunction<FlatMapFunction<RowData, RowData>> generatedCalc;
    private final GeneratedCollector<ListenableCollector<RowData>> generatedCollector;
    private final boolean leftOuterJoin;
    private final int tableFieldsCount;
    private final LookupKeys keys;
    private final BatchFetcher fetcher;

    private transient FilterCondition preFilter;
    private transient FlatMapFunction<RowData, RowData> calc;
    private transient ListenableCollector<RowData> collector;
    private transient GenericRowData nullRow;
    private transient JoinedRowData outRow;

    /**
     * @param runner Flink's sync runner of the join ({@link LookupJoinRunner} or {@link
     *     LookupJoinWithCalcRunner}), whose generated pieces this batch runs
     * @param keys the join's lookup keys
     * @param fetcher answers a batch's key rows
     */
    public FetchingLookupBatch(LookupJoinRunner runner, LookupKeys keys, BatchFetcher fetcher) {
        this.generatedPreFilter = FlinkFields.read(runner, LookupJoinRunner.class, "generatedPreFilterCondition");
        this.generatedCollector = FlinkFields.read(runner, LookupJoinRunner.class, "generatedCollector");
        this.generatedCalc = runner instanceof LookupJoinWithCalcRunner
                ? FlinkFields.read(runner, LookupJoinWithCalcRunner.class, "generatedCalc")
                : null;
        this.leftOuterJoin = FlinkFields.<Boolean>read(runner, LookupJoinRunner.class, "isLeftOuterJoin");
        this.tableFieldsCount = FlinkFields.<Integer>read(runner, LookupJoinRunner.class, "tableFieldsCount");
        this.keys = Objects.requireNonNull(keys, "keys");
        this.fetcher = Objects.requireNonNull(fetcher, "fetcher");
    }

    @Override
    public Function function() {
        return null;
    }

    @Override
    public void open(RuntimeContext context) throws Exception {
        ClassLoader cl = context.getUserCodeClassLoader();
        preFilter = generatedPreFilter.newInstance(cl);
        FunctionUtils.setFunctionRuntimeContext(preFilter, context);
        FunctionUtils.openFunction(preFilter, DefaultOpenContext.INSTANCE);
        collector = generatedCollector.newInstance(cl);
        FunctionUtils.setFunctionRuntimeContext(collector, context);
        FunctionUtils.openFunction(collector, DefaultOpenContext.INSTANCE);
        if (generatedCalc != null) {
            calc = generatedCalc.newInstance(cl);
            FunctionUtils.setFunctionRuntimeContext(calc, context);
            FunctionUtils.openFunction(calc, DefaultOpenContext.INSTANCE);
        }
        nullRow = new GenericRowData(tableFieldsCount);
        outRow = new JoinedRowData();
        fetcher.open(context);
    }

    @Override
    public void run(List<StreamRecord<RowData>> probes, ProbeContext context, ProbeOutput out) throws Exception {
        int n = probes.size();
        int[] keyIndex = new int[n];
        List<RowData> keyRows = new ArrayList<>(n);
        FilterCondition.Context filterContext = FilterCondition.Context.of(context);
        for (int i = 0; i < n; i++) {
            context.setElement(probes.get(i));
            RowData probe = probes.get(i).getValue();
            RowData key = preFilter.apply(filterContext, probe) ? keys.keyRow(probe) : null;
            keyIndex[i] = key == null ? -1 : keyRows.size();
            if (key != null) {
                keyRows.add(key);
            }
        }
        List<List<RowData>> fetched = keyRows.isEmpty() ? Collections.emptyList() : fetcher.fetch(keyRows);
        if (fetched == null || fetched.size() != keyRows.size()) {
            throw new IllegalStateException("the batch fetcher " + fetcher.getClass().getName() + " answered "
                    + (fetched == null ? "null" : fetched.size() + " keys") + " for " + keyRows.size() + " keys");
        }
        for (int i = 0; i < n; i++) {
            StreamRecord<RowData> record = probes.get(i);
            RowData probe = record.getValue();
            out.setProbe(record);
            collector.setCollector(out);
            collector.setInput(probe);
            collector.reset();
            List<RowData> rows = keyIndex[i] < 0 ? null : fetched.get(keyIndex[i]);
            if (rows != null) {
                for (RowData row : rows) {
                    if (calc == null) {
                        collector.collect(row);
                    } else {
                        try {
                            calc.flatMap(row, collector);
                        } catch (Exception e) {
                            // as LookupJoinWithCalcRunner's CalcCollector
                            throw new RuntimeException(e);
                        }
                    }
                }
            }
            if (leftOuterJoin && !collector.isCollected()) {
                outRow.replace(probe, nullRow);
                outRow.setRowKind(probe.getRowKind());
                out.collect(outRow);
            }
        }
    }

    @Override
    public void close() throws Exception {
        Closing.closeAll(fetcher::close, () -> closeFunction(calc), () -> closeFunction(collector),
                () -> closeFunction(preFilter));
    }

    private static void closeFunction(@Nullable Function f) throws Exception {
        if (f != null) {
            FunctionUtils.closeFunction(f);
        }
    }

    @Override
    public String mode() {
        return "batched fetch (" + fetcher.getClass().getSimpleName() + ")";
    }
}
