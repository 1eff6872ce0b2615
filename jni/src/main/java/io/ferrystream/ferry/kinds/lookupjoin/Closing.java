package io.ferrystream.ferry.kinds.lookupjoin;

/** Closing several resources where each must close even when an earlier one failed. */
public final class Closing {
    private Closing() {}

    /**
     * Closes each resource in order (nulls skipped) and throws the first failure, the later ones
     * suppressed into it.
     */
    public static void closeAll(AutoCloseable... resources) throws Exception {
        Exception first = null;
        for (AutoCloseable c : resources) {
            if (c == null) {
                continue;
            }
            try {
                c.close();
            } catch (Exception e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
