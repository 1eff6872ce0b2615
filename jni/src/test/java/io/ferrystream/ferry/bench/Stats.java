package io.ferrystream.ferry.bench;

import java.util.Arrays;

final class Stats {
    private Stats() {}

    static double median(double[] v) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }

    static double min(double[] v) {
        return Arrays.stream(v).min().orElse(Double.NaN);
    }

    static double max(double[] v) {
        return Arrays.stream(v).max().orElse(Double.NaN);
    }
}
