// Example datatypes that show how the engine sees common layouts (used by
// `dtmpi-info --explain` and the benchmarks).
#pragma once
#include <mpi.h>

#include <string>
#include <vector>

namespace dtmpi::tools {

struct CatalogType {
  std::string name;
  MPI_Datatype type;  // committed; free with free_catalog
};

std::vector<CatalogType> make_catalog();
void free_catalog(std::vector<CatalogType>& c);

}  // namespace dtmpi::tools
