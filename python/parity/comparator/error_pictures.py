"""Polygraphy's pictures of a comparison: heatmaps of the absolute and relative error of an output pair
(--save-heatmaps/--show-heatmaps) and the plot of both errors against the reference's magnitude
(--save-error-metrics-plot/--show-error-metrics-plot), drawn with matplotlib with Polygraphy's layout,
titles and file names (polygraphy/comparator/util.py: build_heatmaps, scatter_plot_error_magnitude).

Used in-process by the Python API (CompareFunc.simple) and, its text built into the binary, in a Python
worker by `parity run`: it needs numpy and matplotlib only, and returns its messages instead of logging
them, so each caller logs them its own way.

Where Parity differs from Polygraphy (docs/pictures.md):
  - an output of rank 0 or 1 gets no heatmap (a message says so): it has no rows and columns;
  - NaN and Inf do not end the run: the colour scale and the plot's axes are set from the finite errors,
    a NaN element is drawn in the colour map's "bad" colour, and the plot leaves out its non-finite points
    (a message counts them);
  - the relative error's log scale starts at its smallest positive error (Polygraphy's LogNorm from a
    minimum of 0 fails to draw); when there is none, the scale is linear.
"""
import math
import os

# Polygraphy's figure layout (comparator/util.py).
_MAX_HEIGHT = 1080
_MAX_WIDTH = 1920
_MAX_NUM_ROWS = 14
_MAX_NUM_COLS = 7
_FONT_SIZE = "xx-small"
_EPSILON = 2.220446049250313e-16


def display_available():
    """Why no window can be opened, or None when one can."""
    if os.name == "nt" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return "no display (neither DISPLAY nor WAYLAND_DISPLAY is set)"


def _pyplot(show):
    """matplotlib.pyplot, with a window backend when a window was asked for and a display exists, else Agg."""
    import matplotlib

    if not show or display_available() is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return matplotlib, plt


def _cast_up(array):
    import numpy as np

    if array.dtype == np.float16:
        return array.astype(np.float32)
    if array.dtype in (np.int8, np.uint8, np.int16, np.uint16):
        return array.astype(np.int32)
    if array.dtype == np.uint32:
        return array.astype(np.int64)
    return array


def errors(out0, out1, infinities_compare_equal=False):
    """Polygraphy's absolute and relative error arrays of simple's comparison (the relative error against
    out1, with 2.22e-16 added to its zeros)."""
    import numpy as np

    out0 = np.asarray(out0)
    out1 = np.asarray(out1)
    with np.errstate(all="ignore"):
        if out0.dtype == np.bool_ and out1.dtype == np.bool_:
            absdiff = np.logical_xor(out0, out1)
        else:
            absdiff = np.abs(np.subtract(_cast_up(out0), _cast_up(out1)))
            if infinities_compare_equal:
                absdiff = np.where(np.logical_and(np.isinf(out0), out0 == out1), 0, absdiff)
        reference = np.array(_cast_up(out1), copy=True)
        if np.issubdtype(reference.dtype, np.floating):
            reference[reference == 0] += _EPSILON
        reldiff = np.divide(absdiff, np.abs(reference))
    return absdiff, reldiff, _cast_up(out1)


def _finite_range(array, positive=False):
    """(min, max) of the finite (and, with `positive`, positive) values, or None when there are none."""
    import numpy as np

    values = np.asarray(array, dtype=np.float64).ravel()
    keep = np.isfinite(values)
    if positive:
        keep &= values > 0
    if not keep.any():
        return None
    values = values[keep]
    return float(values.min()), float(values.max())


def _sanitize_filename(path):
    return path.replace(os.path.sep, "_")


def heatmaps(array, prefix, save_dir=None, show=False, use_lognorm=False):
    """Polygraphy's build_heatmaps: the last two dimensions are an image's height and width, the leading ones
    are flattened into the image count; at most 14 x 7 images per figure. Returns the messages to log."""
    import numpy as np

    messages = []
    shape = tuple(array.shape)
    if len(shape) < 2:
        messages.append(f"No heatmap for {prefix}: the output has rank {len(shape)} (shape {list(shape)}); "
                        "a heatmap needs at least two dimensions")
        return messages
    if 0 in shape:
        messages.append(f"No heatmap for {prefix}: the output is empty (shape {list(shape)})")
        return messages
    messages.append(f"Building heatmaps for {prefix}. This may take a while...")
    matplotlib, plt = _pyplot(show)
    original_shape = (1,) * (3 - len(shape)) + shape if len(shape) < 3 else shape
    images = np.asarray(array, dtype=np.float64).reshape((-1, original_shape[-2], original_shape[-1]))
    height, width = images.shape[-2], images.shape[-1]
    num_images = images.shape[0]

    def coord(index):
        position = []
        for dim in reversed(original_shape[:-2]):
            position.insert(0, index % dim)
            index //= dim
        return f"({','.join(map(str, position))},0:{height},0:{width})"

    # An image taller or wider than a figure still gets one row or column.
    num_rows = max(1, min(_MAX_HEIGHT // height, _MAX_NUM_ROWS))
    num_cols = max(1, min(_MAX_WIDTH // width, _MAX_NUM_COLS))
    if num_images < num_rows * num_cols:
        num_cols = min(num_images, num_cols)
        num_rows = math.ceil(num_images / num_cols)
    per_figure = num_rows * num_cols
    finite = _finite_range(array)
    vmin, vmax = finite if finite else (0.0, 0.0)
    positive = _finite_range(array, positive=True) if use_lognorm else None
    for figure_index in range(math.ceil(num_images / per_figure)):
        figure, axes = plt.subplots(num_rows, num_cols, squeeze=False, dpi=200, constrained_layout=True)
        base = figure_index * per_figure
        try:
            # Polygraphy appends " (Log Scale)" to the prefix for every figure drawn on a log scale.
            if use_lognorm and vmin != vmax and positive is not None and positive[0] != positive[1]:
                norm = matplotlib.colors.LogNorm(vmin=positive[0], vmax=positive[1])
                prefix += " (Log Scale)"
            else:
                norm = matplotlib.colors.Normalize(vmin=vmin, vmax=vmax)
            title = f"{prefix}: {coord(base)} to {coord(min(base + per_figure, num_images) - 1)}"
            figure.suptitle(title, fontsize=_FONT_SIZE)
            drawn = []
            for row in range(num_rows):
                for col in range(num_cols):
                    index = base + col + row * num_cols
                    axis = axes[row, col]
                    axis.set_axis_off()
                    if index < num_images:
                        image, name = images[index], coord(index)
                    else:
                        image, name = np.zeros(shape=(height, width)), "Out Of Bounds"
                    axis.set_title(name, fontsize=_FONT_SIZE)
                    drawn.append(axis.imshow(image, cmap="plasma", filternorm=False, resample=False))
            for image in drawn:
                image.set_norm(norm)
            figure.colorbar(drawn[0], ax=axes, shrink=0.7)
            if save_dir is not None:
                path = os.path.join(save_dir, f"{_sanitize_filename(title)}.svg")
                os.makedirs(save_dir, exist_ok=True)
                messages.append(f"Saving '{prefix}' heatmap to: '{path}'")
                figure.savefig(path)
            if show:
                plt.show()
        finally:
            plt.close(figure)
    return messages


def error_metrics_plot(absdiff, reldiff, reference, runner0, runner1, name0, name1, save_dir=None, show=False):
    """Polygraphy's scatter_plot_error_magnitude: absolute and relative error against |reference|, saved as
    error_metrics_<name0>.png at 1200 dpi. Returns the messages to log."""
    import numpy as np

    messages = [f"Building error metrics plot for {name0}. This may take a while..."]
    _, plt = _pyplot(show)
    title = (f"Error metrics between output0 and output1\noutput0: {runner0:35} | {name0}\n"
             f"output1: {runner1:35} | {name1}")
    file_name = _sanitize_filename(f"error_metrics_{name0}.png")
    magnitude = np.abs(np.asarray(reference, dtype=np.float64)).ravel()
    absolute = np.asarray(absdiff, dtype=np.float64).ravel()
    relative = np.asarray(reldiff, dtype=np.float64).ravel()
    keep = np.isfinite(magnitude) & np.isfinite(absolute) & np.isfinite(relative)
    if not keep.all():
        messages.append(f"The error metrics plot of {name0} leaves out {int((~keep).sum())} of {keep.size} element(s) "
                        "whose value or error is NaN or Inf")
    magnitude, absolute, relative = magnitude[keep], absolute[keep], relative[keep]

    def set_ax_properties(axis):
        axis.tick_params(axis="x", labelrotation=90)
        axis.tick_params(axis="both", labelsize=6)
        axis.grid(linestyle="--")
        axis.xaxis.label.set_fontsize(7)
        axis.yaxis.label.set_fontsize(7)

    def set_linear_ax(axis):
        xticks, yticks = axis.get_xticks(), axis.get_yticks()
        axis.set_xticks(np.linspace(0, xticks[-1], 20))
        axis.set_yticks(np.linspace(0, yticks[-1], 10))
        set_ax_properties(axis)

    def set_log_ax(axis, low, high):
        axis.set_yscale("log")
        xticks = axis.get_xticks()
        eps = 1e-15
        yrange = np.log10(np.array([low + eps, high + eps]))
        yrange[0] = math.floor(yrange[0])
        yrange[1] = math.ceil(yrange[1])
        axis.set_xticks(np.linspace(0, xticks[-1], 20))
        axis.set_yticks(np.power(10, np.arange(yrange[0], yrange[1], 1)))
        set_ax_properties(axis)

    figure, axes = plt.subplots(2, sharex=True, constrained_layout=True)
    try:
        figure.suptitle(title, fontsize=7)
        axes[0].scatter(magnitude, absolute, s=1)
        axes[0].set(ylabel="Absolute error")
        set_linear_ax(axes[0])
        axes[1].scatter(magnitude, relative, s=1)
        suffix = ""
        relative_range = _finite_range(relative)
        if relative_range is not None and relative_range[0] != relative_range[1]:
            set_log_ax(axes[1], *relative_range)
            suffix = " (log scale)"
        else:
            set_linear_ax(axes[1])
        axes[1].set(xlabel="output1 magnitude", ylabel=f"Relative error{suffix}")
        if save_dir is not None:
            path = os.path.join(save_dir, file_name)
            os.makedirs(save_dir, exist_ok=True)
            messages.append(f"Saving error metrics plot to: '{path}'")
            figure.savefig(path, dpi=1200, bbox_inches="tight")
        if show:
            plt.show()
    finally:
        plt.close(figure)
    return messages


def draw(out0, out1, runner0, runner1, name0, name1, save_heatmaps=None, show_heatmaps=False,
         save_error_metrics_plot=None, show_error_metrics_plot=False, infinities_compare_equal=False):
    """Every picture asked for of one output pair, in Polygraphy's order (the plot, then the absolute and
    relative heatmaps). Returns [(severity, message)] with severity "info" or "warning"."""
    messages = []
    wants_plot = bool(save_error_metrics_plot or show_error_metrics_plot)
    wants_heatmaps = bool(save_heatmaps or show_heatmaps)
    if not (wants_plot or wants_heatmaps):
        return messages
    no_display = display_available()
    if no_display is not None:
        for flag, asked in (("show_heatmaps", show_heatmaps), ("show_error_metrics_plot", show_error_metrics_plot)):
            if asked:
                messages.append(("warning", f"{flag}: cannot open a window: {no_display}; save the pictures "
                                            "instead (save_heatmaps, save_error_metrics_plot)"))
        show_heatmaps = show_error_metrics_plot = False
    import numpy as np

    if np.asarray(out0).shape != np.asarray(out1).shape:
        messages.append(("warning", f"No pictures for {name0}: its shapes differ ({list(np.shape(out0))} vs "
                                    f"{list(np.shape(out1))})"))
        return messages
    absdiff, reldiff, reference = errors(out0, out1, infinities_compare_equal)
    if wants_plot:
        messages += [("info", m) for m in error_metrics_plot(
            absdiff, reldiff, reference, runner0, runner1, name0, name1,
            save_dir=save_error_metrics_plot or None, show=show_error_metrics_plot)]
    if wants_heatmaps:
        for diff, kind, log_scale in ((absdiff, "Absolute", False), (reldiff, "Relative", True)):
            messages += [("info", m) for m in heatmaps(
                diff, f"{kind} Error | {name0}", save_dir=save_heatmaps or None, show=show_heatmaps,
                use_lognorm=log_scale)]
    return messages
