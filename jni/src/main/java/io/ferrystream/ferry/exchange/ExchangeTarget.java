package io.ferrystream.ferry.exchange;

import org.apache.flink.runtime.io.network.api.writer.ResultPartitionWriter;
import org.apache.flink.streaming.api.graph.NonChainedOutput;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.runtime.tasks.StreamTask;

import java.util.List;

/**
 * The consumer's parallelism and max parallelism of the one exchange an operator writes to, as
 * Flink's network stack knows them at run time: they can differ from the plan's (parallelism
 * overrides, a max parallelism derived or restored at submission), and only they route rows
 * where Flink would. Read from the result partition writer Flink configures the exchange's
 * partitioner from: the operator's output's position among its task's outputs.
 */
public final class ExchangeTarget {
    /** The consumer's parallelism: the exchange's channel count. */
    public final int parallelism;
    /** The consumer's max parallelism: the number of key groups. */
    public final int maxParallelism;

    private ExchangeTarget(int parallelism, int maxParallelism) {
        this.parallelism = parallelism;
        this.maxParallelism = maxParallelism;
    }

    /**
     * @throws IllegalStateException when the operator does not write exactly one exchange of its
     *     task (e.g. another operator is chained after it), naming what it found
     */
    public static ExchangeTarget of(AbstractStreamOperator<?> operator) {
        StreamTask<?, ?> task = operator.getContainingTask();
        ClassLoader cl = operator.getUserCodeClassloader();
        List<NonChainedOutput> own = operator.getOperatorConfig().getOperatorNonChainedOutputs(cl);
        List<NonChainedOutput> all = task.getConfiguration().getVertexNonChainedOutputs(cl);
        int index = own.size() == 1 ? all.indexOf(own.get(0)) : -1;
        if (index < 0 || operator.getOperatorConfig().getChainedOutputs(cl).size() > 0) {
            throw new IllegalStateException("Ferry's columnar exchange: " + operator.getClass().getSimpleName()
                    + " must write exactly one exchange and nothing else; it has " + own.size()
                    + " exchange outputs and " + operator.getOperatorConfig().getChainedOutputs(cl).size()
                    + " chained ones (set ferry.exchange.columnar.enabled: false to use Flink's row exchange)");
        }
        ResultPartitionWriter writer = task.getEnvironment().getWriter(index);
        return new ExchangeTarget(writer.getNumberOfSubpartitions(), writer.getNumTargetKeyGroups());
    }
}
