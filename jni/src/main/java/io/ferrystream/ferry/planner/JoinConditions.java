package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.arrow.ArrowTypes;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.utils.RexLiteralUtil;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.calcite.rex.RexCall;
import org.apache.calcite.rex.RexInputRef;
import org.apache.calcite.rex.RexLiteral;
import org.apache.calcite.rex.RexNode;
import org.apache.calcite.sql.SqlKind;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Encodes a join's residual condition (Flink's {@code JoinSpec} nonEquiCondition, a RexNode over
 * the left fields followed by the right fields) as the {@code condition} parameter of the joins'
 * specs (the interval and the regular join, docs/abi.md): a tree of {@code {"op", "args", "field",
 * "type", "value"}} nodes. Only the shape is checked here (operators, literals); libferry.so
 * decides which operand types it evaluates exactly as Flink's generated code does, and refuses
 * the rest. The fallback reasons about the condition ({@link #reason}, {@link #refusal}) name its
 * fields.
 */
public final class JoinConditions {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final Map<SqlKind, String> OPS = Map.ofEntries(
            Map.entry(SqlKind.AND, "and"),
            Map.entry(SqlKind.OR, "or"),
            Map.entry(SqlKind.NOT, "not"),
            Map.entry(SqlKind.IS_NULL, "is_null"),
            Map.entry(SqlKind.IS_NOT_NULL, "is_not_null"),
            Map.entry(SqlKind.EQUALS, "eq"),
            Map.entry(SqlKind.NOT_EQUALS, "ne"),
            Map.entry(SqlKind.LESS_THAN, "lt"),
            Map.entry(SqlKind.LESS_THAN_OR_EQUAL, "le"),
            Map.entry(SqlKind.GREATER_THAN, "gt"),
            Map.entry(SqlKind.GREATER_THAN_OR_EQUAL, "ge"),
            Map.entry(SqlKind.PLUS, "plus"),
            Map.entry(SqlKind.MINUS, "minus"),
            Map.entry(SqlKind.CAST, "cast"));

    /** Operators whose result type the node carries. */
    private static final List<String> TYPED = List.of("plus", "minus", "cast");

    private JoinConditions() {}

    /** A condition Ferry cannot encode; the message names the part. */
    public static final class Unsupported extends Exception {
        private static final long serialVersionUID = 1L;

        Unsupported(String message) {
            super(message);
        }
    }

    /** The condition as the JSON text of the spec's {@code condition} parameter. */
    public static String encode(RexNode condition) throws Unsupported {
        return encodeNode(condition).toString();
    }

    /**
     * The JSON text of {@code joinSpec}'s residual condition, or null when it has none.
     *
     * @throws IllegalArgumentException when it cannot be encoded ({@link #reason} says why first)
     */
    @Nullable
    public static String encodeResidual(JoinSpec joinSpec) {
        try {
            return joinSpec.getNonEquiCondition().isPresent() ? encode(joinSpec.getNonEquiCondition().get()) : null;
        } catch (Unsupported e) {
            throw new IllegalArgumentException("the residual condition is not native: " + e.getMessage(), e);
        }
    }

    /**
     * Why {@code joinSpec}'s residual condition cannot be encoded, or null (also when it has none).
     *
     * @param fieldNames the names of the left and right input fields, in the join's row order (to
     *     name the condition's fields in the reason), or null
     */
    @Nullable
    public static String reason(JoinSpec joinSpec, @Nullable List<String> fieldNames) {
        if (joinSpec.getNonEquiCondition().isEmpty()) {
            return null;
        }
        try {
            encode(joinSpec.getNonEquiCondition().get());
            return null;
        } catch (Unsupported e) {
            return "non-equi join condition " + text(joinSpec, fieldNames) + ": " + named(e.getMessage(), fieldNames)
                    + " not native yet";
        }
    }

    /**
     * The reason for libferry.so's refusal of a spec with {@code joinSpec}'s residual condition:
     * a refusal of the condition ({@code residual join condition: …}, Go naming the part by its
     * types) said with the condition and its field names; any other refusal as it is.
     */
    public static String refusal(JoinSpec joinSpec, @Nullable List<String> fieldNames, String refused) {
        String prefix = "residual join condition: ";
        if (joinSpec.getNonEquiCondition().isPresent() && refused.startsWith(prefix)) {
            return "non-equi join condition " + text(joinSpec, fieldNames) + ": " + refused.substring(prefix.length())
                    + " not native yet";
        }
        return refused;
    }

    private static String text(JoinSpec joinSpec, @Nullable List<String> fieldNames) {
        return named(joinSpec.getNonEquiCondition().get().toString(), fieldNames);
    }

    /** A RexNode's text with its input references ($i) replaced by the fields' names (none: as it is). */
    public static String named(String rex, @Nullable List<String> fieldNames) {
        if (fieldNames == null) {
            return rex;
        }
        Matcher m = Pattern.compile("\\$(\\d+)").matcher(rex);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            int i = Integer.parseInt(m.group(1));
            m.appendReplacement(b, Matcher.quoteReplacement(i < fieldNames.size() ? fieldNames.get(i) : m.group()));
        }
        return m.appendTail(b).toString();
    }

    private static ObjectNode encodeNode(RexNode node) throws Unsupported {
        ObjectNode n = JSON.createObjectNode();
        if (node instanceof RexInputRef ref) {
            LogicalType t = FlinkTypeFactory.toLogicalType(ref.getType());
            if (t instanceof LocalZonedTimestampType) {
                // Go sees it as TIMESTAMP; Flink compares it with TIMESTAMP in the session time zone
                throw new Unsupported("a field of type " + t.asSummaryString());
            }
            n.put("op", "field");
            n.put("field", ref.getIndex());
            return n;
        }
        if (node instanceof RexLiteral literal) {
            return literal(literal);
        }
        if (!(node instanceof RexCall call)) {
            throw new Unsupported(node.getKind() + " " + node);
        }
        String op = OPS.get(call.getKind());
        if (op == null) {
            throw new Unsupported("operator " + call.getOperator().getName());
        }
        n.put("op", op);
        if (TYPED.contains(op)) {
            n.put("type", typeName(call.getType(), call));
        }
        ArrayNode args = n.putArray("args");
        for (RexNode operand : call.getOperands()) {
            args.add(encodeNode(operand));
        }
        return n;
    }

    private static String typeName(org.apache.calcite.rel.type.RelDataType type, RexNode where) throws Unsupported {
        LogicalType t = FlinkTypeFactory.toLogicalType(type);
        try {
            return ArrowTypes.specTypeOf(t);
        } catch (UnsupportedOperationException e) {
            throw new Unsupported("type " + t.asSummaryString() + " of " + where);
        }
    }

    /** A literal with Flink's internal value of it, as the generated code holds it. */
    private static ObjectNode literal(RexLiteral literal) throws Unsupported {
        ObjectNode n = JSON.createObjectNode();
        n.put("op", "literal");
        n.put("type", typeName(literal.getType(), literal));
        Object v = RexLiteralUtil.toFlinkInternalValue(literal).f0;
        if (v == null) {
            return n;
        }
        String value;
        if (v instanceof Boolean || v instanceof Byte || v instanceof Short || v instanceof Integer || v instanceof Long
                || v instanceof Float || v instanceof Double || v instanceof StringData) {
            value = v.toString(); // DATE: days; Float/Double: Java's shortest round-trip text
        } else if (v instanceof DecimalData d) {
            value = d.toBigDecimal().toPlainString();
        } else if (v instanceof TimestampData ts) {
            value = ts.getMillisecond() + "," + ts.getNanoOfMillisecond();
        } else {
            throw new Unsupported("literal " + literal + " of type " + literal.getType());
        }
        n.put("value", value);
        return n;
    }
}
