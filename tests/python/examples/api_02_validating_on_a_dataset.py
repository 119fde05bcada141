"""Polygraphy's examples/api/02_validating_on_a_dataset/example.py ported to Parity: imports renamed,
TensorRT's runner swapped for ONNX Runtime's. `PARITY_EXAMPLE_PACKAGE=polygraphy` runs the same
script with polygraphy's modules, for the tests to compare."""
import os

import numpy as np

if os.environ.get("PARITY_EXAMPLE_PACKAGE") == "polygraphy":
    from polygraphy.backend.onnxrt import OnnxrtRunner, SessionFromOnnx
else:
    from parity.backend.onnxrt import OnnxrtRunner, SessionFromOnnx

REAL_DATASET = [
    np.ones((1, 1, 2, 2), dtype=np.float32),
    np.zeros((1, 1, 2, 2), dtype=np.float32),
    np.ones((1, 1, 2, 2), dtype=np.float32),
    np.zeros((1, 1, 2, 2), dtype=np.float32),
]  # Definitely real data

# For our identity network, the golden output values are the same as the input values.
EXPECTED_OUTPUTS = REAL_DATASET


def main():
    build_session = SessionFromOnnx("identity.onnx")

    with OnnxrtRunner(build_session) as runner:
        for data, golden in zip(REAL_DATASET, EXPECTED_OUTPUTS):
            # Parity's arrays are never reused by the runner, so no copy is needed to keep them.
            outputs = runner.infer(feed_dict={"x": data})

            assert np.array_equal(outputs["y"], golden)

        print("Validation succeeded!")


if __name__ == "__main__":
    main()
