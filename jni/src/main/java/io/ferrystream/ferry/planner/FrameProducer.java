package io.ferrystream.ferry.planner;

/**
 * An exec node that can write Ferry's columnar exchange (the local aggregate, the incremental
 * aggregate): asked by {@link FerryStreamExecColumnarExchange} before its translation, it emits
 * frames when it translates natively, rows when it falls back.
 */
interface FrameProducer {
    /** The node's operator writes frames when native. Before translation. */
    void writeFrames();
}
