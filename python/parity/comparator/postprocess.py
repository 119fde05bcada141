"""Polygraphy's PostprocessFunc, with Parity's top-K (numpy's stable argsort order)."""
from parity import _parity
from parity._feeds import as_native_array


def _for_output(value, name):
    if isinstance(value, dict):
        return value.get(name, value.get(""))
    return value


class PostprocessFunc:
    @staticmethod
    def top_k(k=None, axis=None):
        """A function replacing each output of an IterationResult by the indices of its k largest
        values along `axis` (default -1). k: int, (k, axis), or {output name: either} with "" as the
        default; outputs with no entry are left unchanged. Defaults to 10."""
        k = 10 if k is None else k
        default_axis = -1 if axis is None else axis

        def top_k_impl(iter_result):
            for name, output in list(iter_result.items()):
                k_value = _for_output(k, name)
                if not k_value:
                    continue
                output_axis = default_axis
                if isinstance(k_value, (tuple, list)):
                    k_value, output_axis = k_value
                array, dtype = as_native_array(output, f"output '{name}'")
                iter_result[name] = _parity.top_k_indices(array, dtype, int(k_value), int(output_axis))
            return iter_result

        top_k_impl._parity_top_k = (k, default_axis)  # what Comparator.run_layerwise applies to each tensor
        return top_k_impl
