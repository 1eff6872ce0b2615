package io.ferrystream.ferry.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Per test: libferry.so loaded, a fresh allocator, and afterwards proof that nothing leaked: the
 * allocator closes cleanly (no Java buffer left) and the library holds no output batch.
 * Register with {@code @RegisterExtension final NativeTestAllocator lib = new NativeTestAllocator();}.
 */
public final class NativeTestAllocator implements BeforeEachCallback, AfterEachCallback {
    private BufferAllocator allocator;

    /** The current test's allocator. */
    public BufferAllocator allocator() {
        return allocator;
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        NativeLibrary.load();
        assertEquals(0, NativeLibrary.outstandingBytes(), "a previous test leaked native output");
        allocator = new RootAllocator();
    }

    @Override
    public void afterEach(ExtensionContext context) {
        allocator.close(); // fails on any leaked Java buffer
        assertEquals(0, NativeLibrary.outstandingBytes(), "native output not released");
    }
}
