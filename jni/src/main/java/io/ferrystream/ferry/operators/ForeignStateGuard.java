package io.ferrystream.ferry.operators;

import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.RegisteredStateMetaInfoBase;
import org.apache.flink.runtime.state.SavepointResources;
import org.apache.flink.runtime.state.metainfo.StateMetaInfoSnapshot;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Refuses to start a native operator on managed keyed state it cannot import (docs/state.md,
 * "Switching Ferry on or off").
 *
 * <p>Ferry's operators keep their state in Go and checkpoint it as raw keyed state; they register no
 * managed keyed state. In plain SQL a native operator gets the operator ID Flink's own operator
 * would get, so a checkpoint or savepoint taken with Ferry off hands the stock operator's managed
 * keyed state ({@code accState}, {@code distinctAcc_0}, ...) to the native one. Flink restores such
 * state into the keyed state backend whether or not anybody registers it; ignored, it would be lost
 * for the job's results and carried along, stale, in every later checkpoint. This guard runs in the
 * restore path of every native operator: it lets through the states of Flink's operator
 * where Ferry imports it ({@link FlinkState}) and fails the restore otherwise, naming the
 * operator, the states that hold data, why they are not imported and the way out.
 */
public final class ForeignStateGuard {
    private ForeignStateGuard() {}

    /**
     * Fails when {@code backend}, just restored, holds managed keyed state with data.
     *
     * @param operator the native operator's name, for the message
     * @param kind the operator's kind ({@code NativeSpec#kind()}), whose switch the message names
     * @param backend the operator's keyed state backend; null for an operator that is not keyed,
     *     which has no keyed state to find
     * @throws IllegalStateException naming the states found
     */
    public static void check(String operator, String kind, KeyedStateBackend<?> backend) throws Exception {
        importable(operator, kind, backend, null);
    }

    /**
     * What to import from {@code backend}, just restored: null when it holds no managed keyed state
     * with data, {@code flinkState} when every such state is one of {@link FlinkState#names} and
     * Ferry imports it; otherwise fails.
     *
     * @param flinkState the state Flink's operator keeps in the native operator's place, or null
     *     for a kind that imports none
     * @throws IllegalStateException naming the states found and why they are not imported
     */
    static FlinkState importable(String operator, String kind, KeyedStateBackend<?> backend, FlinkState flinkState)
            throws Exception {
        if (backend == null) {
            return null;
        }
        List<String> found = statesWithData(backend);
        if (found.isEmpty()) {
            return null;
        }
        String why;
        if (flinkState == null) {
            why = "Ferry cannot read that state yet";
        } else if (flinkState.refusal() != null) {
            why = "Ferry cannot import it yet (" + flinkState.refusal() + ")";
        } else if (!flinkState.names().containsAll(found)) {
            why = "Ferry imports " + String.join(", ", flinkState.names()) + " and cannot read the rest yet";
        } else {
            return flinkState;
        }
        throw new IllegalStateException(message(operator, kind, found, why));
    }

    /**
     * The key-value states of {@code backend} that hold at least one entry, by name. A native
     * operator registers none, so every one found was written by another operator (Flink's own,
     * before Ferry was switched on).
     */
    static List<String> statesWithData(KeyedStateBackend<?> backend) throws Exception {
        List<String> withData = new ArrayList<>();
        for (String name : keyValueStates(backend)) {
            try (Stream<?> keys = backend.getKeysAndNamespaces(name)) {
                if (keys.findAny().isPresent()) {
                    withData.add(name);
                }
            }
        }
        return withData;
    }

    /**
     * Names of the key-value states the backend holds, read from the meta information Flink would
     * write into a canonical savepoint (the one public listing of a backend's states). Priority-queue
     * states (timers) are left out: Flink's stateful SQL operators keep data in key-value states,
     * which any pending timer accompanies.
     */
    private static List<String> keyValueStates(KeyedStateBackend<?> backend) throws Exception {
        if (!(backend instanceof CheckpointableKeyedStateBackend)) { // every backend of Flink 2.3 is
            throw new IllegalStateException(unlistable(backend, "it is not checkpointable"));
        }
        SavepointResources<?> resources;
        try {
            resources = ((CheckpointableKeyedStateBackend<?>) backend).savepoint();
        } catch (UnsupportedOperationException noCanonicalSavepoints) { // ForSt
            return keyValueStatesOfForSt(backend);
        }
        List<String> names = new ArrayList<>();
        try {
            for (StateMetaInfoSnapshot meta : resources.getSnapshotResources().getMetaInfoSnapshots()) {
                if (meta.getBackendStateType() == StateMetaInfoSnapshot.BackendStateType.KEY_VALUE) {
                    names.add(meta.getName());
                }
            }
        } finally {
            resources.getSnapshotResources().release();
        }
        return names;
    }

    /**
     * The same listing for ForSt's synchronous backend, which writes no canonical savepoint: its
     * states' meta information sits in its private {@code kvStateInformation} map (state name →
     * {@code ForStKvStateInfo}, whose public {@code metaInfo} Flink 2.3 fills at restore).
     */
    private static List<String> keyValueStatesOfForSt(KeyedStateBackend<?> backend) {
        List<String> names = new ArrayList<>();
        try {
            Field states = backend.getClass().getDeclaredField("kvStateInformation");
            states.setAccessible(true);
            for (Object info : ((Map<?, ?>) states.get(backend)).values()) {
                RegisteredStateMetaInfoBase meta =
                        (RegisteredStateMetaInfoBase) info.getClass().getField("metaInfo").get(info);
                if (meta.snapshot().getBackendStateType() == StateMetaInfoSnapshot.BackendStateType.KEY_VALUE) {
                    names.add(meta.getName());
                }
            }
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException(unlistable(backend, e.toString()), e);
        }
        return names;
    }

    private static String unlistable(KeyedStateBackend<?> backend, String why) {
        return "Ferry cannot list the state of the keyed state backend " + backend.getClass().getName()
                + " to check it for state it cannot read (" + why + ")";
    }

    /**
     * The refusal: the operator, the states, why, and the way out, which names the kind's own
     * switch ({@code ferry.<kind>.enabled}, the kind's name with hyphens: every kind's switch is
     * named so, NativeKindsTest checks it).
     */
    static String message(String operator, String kind, List<String> states, String why) {
        return "Ferry's native operator "
                + operator
                + " was restored from a checkpoint or savepoint that holds managed keyed state of"
                + " Flink's own operator ("
                + String.join(", ", states)
                + "), taken while Ferry was off for it. "
                + why
                + ": starting would lose it without a word. Restore this job with"
                + " ferry.enabled: false (or the operator's own switch,"
                + " ferry." + kind.replace('_', '-') + ".enabled: false), so Flink's operator reads its state"
                + " (docs/state.md, \"Switching Ferry on or off\").";
    }
}
