"""Polygraphy's examples/api/01_comparing_frameworks/example.py ported to Parity: imports renamed,
TensorRT's runner swapped for OpenVINO's. `PARITY_EXAMPLE_PACKAGE=polygraphy` runs the same script
with polygraphy's modules (a second ONNX Runtime runner in OpenVINO's place: polygraphy has none)."""
import os

if os.environ.get("PARITY_EXAMPLE_PACKAGE") == "polygraphy":
    from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from polygraphy.comparator import Comparator, CompareFunc

    def optimizing_runner(path):
        return OnnxrtRunner(SessionFromOnnx(path))
else:
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
    from parity.backend.openvino import OpenVINORunner
    from parity.comparator import Comparator, CompareFunc

    def optimizing_runner(path):
        return OpenVINORunner(path)


def main():
    build_onnxrt_session = SessionFromOnnx("identity.onnx")

    runners = [
        optimizing_runner("identity.onnx"),
        OnnxrtRunner(build_onnxrt_session),
    ]

    run_results = Comparator.run(runners)

    assert bool(Comparator.compare_accuracy(run_results, compare_func=CompareFunc.simple(atol=1e-8)))

    # Use distance metrics comparison for more comprehensive evaluation
    assert bool(
        Comparator.compare_accuracy(
            run_results,
            compare_func=CompareFunc.distance_metrics(l2_tolerance=1e-5, cosine_similarity_threshold=0.99),
        )
    )
    print("All outputs matched using distance metrics (L2 norm, Cosine Similarity)")

    # Use quality metrics for signal quality evaluation
    assert bool(
        Comparator.compare_accuracy(
            run_results, compare_func=CompareFunc.quality_metrics(psnr_tolerance=50.0, snr_tolerance=25.0)
        )
    )
    print("All outputs matched using quality metrics (PSNR, SNR)")

    run_results.save("inference_results.json")


if __name__ == "__main__":
    main()
