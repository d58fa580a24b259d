#include "type_catalog.hpp"

namespace dtmpi::tools {

namespace {
MPI_Datatype commit(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}
}  // namespace

std::vector<CatalogType> make_catalog() {
  std::vector<CatalogType> c;
  MPI_Datatype t, u, v;

  MPI_Type_vector(8, 2, 64, MPI_DOUBLE, &t);
  c.push_back({"vector(8,2,64,DOUBLE): 16 B blocks at a 512 B pitch", commit(t)});

  int bl[8], di[8];
  for (int i = 0; i < 8; ++i) bl[i] = 2, di[i] = 64 * i;
  MPI_Type_indexed(8, bl, di, MPI_DOUBLE, &t);
  c.push_back({"indexed, same layout as the vector above (regular blocks become strided)", commit(t)});

  int sizes3[3] = {4, 8, 4}, sub3[3] = {1, 3, 2}, st3[3] = {2, 1, 0};
  MPI_Type_create_subarray(3, sizes3, sub3, st3, MPI_ORDER_C, MPI_DOUBLE, &t);
  c.push_back({"subarray({4,8,4},{1,3,2},{2,1,0}): the elided level keeps its offset", commit(t)});

  MPI_Type_contiguous(13, MPI_BYTE, &u);
  MPI_Type_create_hvector(3, 1, 16, u, &v);
  MPI_Type_create_hvector(5, 1, 53, v, &t);
  c.push_back({"by_rows = hvector(5,1,53, hvector(3,1,16, 13 B))", commit(t)});
  MPI_Type_free(&v);
  MPI_Type_create_hvector(5, 1, 53, u, &v);
  MPI_Type_create_hvector(3, 1, 16, v, &t);
  c.push_back({"by_cols = hvector(3,1,16, hvector(5,1,53, 13 B)): never reordered", commit(t)});
  MPI_Type_free(&v);
  MPI_Type_free(&u);

  // a radius-3 halo face (y-z plane, x width 3) of a 256^3 grid of 8 doubles
  int gs[4] = {256 + 6, 256 + 6, 256 + 6, 8}, ss[4] = {256, 256, 3, 8}, s0[4] = {3, 3, 3, 0};
  MPI_Type_create_subarray(4, gs, ss, s0, MPI_ORDER_C, MPI_DOUBLE, &t);
  c.push_back({"halo face x (radius 3, 8 doubles, 256^3): 3D strided", commit(t)});

  int sbl[3] = {1, 2, 1};
  MPI_Aint sd[3] = {0, 8, 16};
  MPI_Datatype st[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
  MPI_Type_create_struct(3, sbl, sd, st, &u);
  MPI_Type_create_resized(u, 0, 24, &v);
  MPI_Type_contiguous(100, v, &t);
  c.push_back({"contiguous(100, struct{double,int,int,char} resized to 24)", commit(t)});
  MPI_Type_free(&u);
  MPI_Type_free(&v);

  int ibl[4] = {2, 0, 3, 1}, idi[4] = {10, 0, 20, 5};
  MPI_Type_indexed(4, ibl, idi, MPI_DOUBLE, &t);
  c.push_back({"indexed({2,0,3,1},{10,0,20,5}): an irregular block list", commit(t)});

  MPI_Type_vector(3, 1, -2, MPI_DOUBLE, &t);
  c.push_back({"vector(3,1,-2,DOUBLE): negative stride", commit(t)});

  int gsz[2] = {10, 12}, dis[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
  int dar[2] = {2, MPI_DISTRIBUTE_DFLT_DARG}, psz[2] = {2, 3};
  MPI_Type_create_darray(6, 4, 2, gsz, dis, dar, psz, MPI_ORDER_C, MPI_INT, &t);
  c.push_back({"darray 10x12 ints, cyclic(2) x block on a 2x3 grid, rank 4", commit(t)});
  return c;
}

void free_catalog(std::vector<CatalogType>& c) {
  for (auto& e : c) MPI_Type_free(&e.type);
  c.clear();
}

}  // namespace dtmpi::tools
