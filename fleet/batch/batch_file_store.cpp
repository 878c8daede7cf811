#include "fleet/batch/batch_file_store.h"

#include <filesystem>
#include <fstream>

namespace cellserve::fleet {

Result<std::string> BatchFileReader::read_range(uint64_t offset, size_t n) {
  std::string out(n, '\0');
  size_t done = 0;
  while (done < n) {
    CS_ASSIGN_OR_RETURN(const size_t got, read_at(offset + done, out.data() + done, n - done));
    if (got == 0) return Status::data_loss("the batch file ends before the range read");
    done += got;
  }
  return out;
}

Status BatchFileStore::adopt(const std::string& id, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::internal("the spooled upload cannot be read");
  CS_ASSIGN_OR_RETURN(std::unique_ptr<BatchFileWriter> out, create(id));
  std::string piece(kBatchFileChunkBytes, '\0');
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got == 0) break;
    CS_RETURN_IF_ERROR(out->write(std::string_view(piece.data(), got)));
  }
  if (in.bad()) return Status::internal("the spooled upload cannot be read");
  CS_RETURN_IF_ERROR(out->commit());
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return {};
}

}  // namespace cellserve::fleet
