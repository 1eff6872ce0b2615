package org.apache.flink.table.planner.delegation;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.catalog.CatalogManager;
import org.apache.flink.table.catalog.FunctionCatalog;
import org.apache.flink.table.delegation.Executor;
import org.apache.flink.table.delegation.InternalPlan;
import org.apache.flink.table.module.ModuleManager;
import org.apache.flink.table.planner.plan.ExecNodeGraphInternalPlan;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeGraph;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.List;

import scala.collection.Seq;

/**
 * Flink's streaming planner with Ferry's nodes in plans loaded from JSON ({@code EXECUTE PLAN},
 * {@code CompiledPlan#execute}): Flink translates those without optimizing them, so Ferry's
 * optimizer program never sees them. Before translation, {@code Ferry.substituteLoadedPlan}
 * replaces the nodes Ferry has a node for, keeping the plan's ids and UIDs.
 */
final class FerryStreamPlanner extends StreamPlanner {
    private final Method substitute;

    FerryStreamPlanner(Executor executor, TableConfig config, ModuleManager moduleManager,
            FunctionCatalog functionCatalog, CatalogManager catalogManager, ClassLoader classLoader,
            Class<?> ferry) {
        super(executor, config, moduleManager, functionCatalog, catalogManager, classLoader);
        try {
            this.substitute = ferry.getMethod("substituteLoadedPlan", ExecNodeGraph.class);
        } catch (NoSuchMethodException e) {
            throw new TableException("Ferry's planner shim does not match this ferry-flink jar: " + e, e);
        }
    }

    @Override
    public List<Transformation<?>> translatePlan(InternalPlan plan) {
        substitute(plan);
        return super.translatePlan(plan);
    }

    /** EXPLAIN of a loaded plan shows the operators it runs. */
    @Override
    public String explainPlan(InternalPlan plan, Seq<ExplainDetail> extraDetails) {
        substitute(plan);
        return super.explainPlan(plan, extraDetails);
    }

    private void substitute(InternalPlan plan) {
        if (!(plan instanceof ExecNodeGraphInternalPlan)) {
            return;
        }
        try {
            substitute.invoke(null, ((ExecNodeGraphInternalPlan) plan).getExecNodeGraph());
        } catch (InvocationTargetException e) {
            throw new TableException("Ferry could not plan the loaded plan: " + e.getCause(), e.getCause());
        } catch (IllegalAccessException e) {
            throw new TableException("Ferry's planner shim does not match this ferry-flink jar: " + e, e);
        }
    }
}
