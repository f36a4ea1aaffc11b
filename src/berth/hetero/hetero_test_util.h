// Shared fixtures of the hetero tests: the repository's catalog and Gavel's
// measured table.
#pragma once

#include <gtest/gtest.h>

#include "berth/hetero/catalog.h"
#include "berth/hetero/throughput.h"
#include "berth/testing/paths.h"

namespace berth::hetero::testutil {

inline std::string CatalogPath() { return berth::testing::SourceDir() + "/data/accelerators.yaml"; }
inline std::string GavelPath() { return berth::testing::DataDir() + "/gavel/simulation_throughputs.json"; }

inline const Catalog& RepoCatalog() {
  static const Catalog* c = [] {
    auto r = LoadCatalog(CatalogPath());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new Catalog(std::move(*r));
  }();
  return *c;
}

inline const MeasuredTable& GavelTable() {
  static const MeasuredTable* t = [] {
    auto r = LoadGavelThroughputs(GavelPath(), RepoCatalog());
    EXPECT_TRUE(r.ok()) << r.status().message();
    return new MeasuredTable(std::move(*r));
  }();
  return *t;
}

}  // namespace berth::hetero::testutil
