// --metric-script file.py[:func] (default function `metric`): a user task metric computed per
// sample and pair of runners, aggregated over the dataset (its mean). The function is called as
// func(result0, result1, feed): the two runners' outputs (dicts of output name -> numpy array with
// a `runner_name` attribute) and the sample's inputs; it returns a number (the metric is named
// after the function) or a dict of metric name -> number. It runs in a Python worker started once.
#pragma once

#include "args/python_scripts.h"
#include "parity/compare/dataset_validation.h"

namespace parity::cli {

// Throws FileError for a script that does not exist. What the function raises on a sample is
// that sample's metric error (compare::SampleRecord::metric_error).
compare::MetricFunc metric_script(const ScriptSpec& script);

}  // namespace parity::cli
