"""Polygraphy's examples/api/08_working_with_run_results_and_saved_inputs_manually/example.py ported
to Parity (imports renamed). `PARITY_EXAMPLE_PACKAGE=polygraphy` runs it with polygraphy's modules."""
import os

if os.environ.get("PARITY_EXAMPLE_PACKAGE") == "polygraphy":
    from polygraphy.comparator import RunResults
    from polygraphy.json import load_json
else:
    from parity.comparator import RunResults
    from parity.json import load_json


def main():
    # Inputs are stored as a `List[Dict[str, np.ndarray]]`, i.e. a list of feed_dicts.
    inputs = load_json("inputs.json")

    [feed_dict] = inputs
    for name, array in feed_dict.items():
        print(f"Input: '{name}' | Values:\n{array}")

    # Use the `RunResults.load` API to load results from file.
    results = RunResults.load("outputs.json")

    for runner_name, [outputs] in results.items():
        print(f"\nProcessing outputs for runner: {runner_name}")
        for name, array in outputs.items():
            print(f"Output: '{name}' | Values:\n{array}")


if __name__ == "__main__":
    main()
