package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.table.annotation.DataTypeHint;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.ScalarFunction;

/**
 * q14's {@code count_char(s, c)}: how many bytes of {@code s}'s UTF-8 equal the first byte of
 * {@code c}'s (Nexmark's UDF, same result); 0 when either is NULL or {@code c} is empty.
 */
public final class CountChar extends ScalarFunction {
    public long eval(@DataTypeHint("STRING") StringData s, @DataTypeHint("STRING") StringData c) {
        byte[] chars = c == null ? null : c.toBytes();
        if (s == null || chars == null || chars.length == 0) {
            return 0;
        }
        byte[] bytes = s.toBytes();
        byte target = chars[0];
        long n = 0;
        for (byte b : bytes) {
            if (b == target) {
                n++;
            }
        }
        return n;
    }
}
