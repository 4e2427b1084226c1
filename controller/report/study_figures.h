// Test data: the published figures of the six-framework study
// (/work/shared/STUDY.md, data collected 2026-09-28) as a RunRecord.
//
// These numbers were measured by the study's author with wrk, not by
// fairbench. They are entered by hand as realistic sample data for report
// tests, and the record says so in its metadata (annotation
// fairbench.dev/description) so that no report rendered from it can pass for
// a measurement. What the study did not publish stays unset: percentiles,
// CPU, request counts, bytes per response outside hello-world, stdev at
// 1,000 connections and latency outside the hello-world scenario.
#pragma once

#include "controller/report/run_record.h"

namespace fairbench::report {

// 6 targets × 6 cells, in cell order, flags computed by CheckCells.
RunRecord StudyFigures();

}  // namespace fairbench::report
