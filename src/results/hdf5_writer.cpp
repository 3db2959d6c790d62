#include "trnsim/results/hdf5_writer.hpp"

#include "trnsim/core/parallel.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <hdf5.h>
#include <zlib.h>

#include <sys/stat.h>

namespace trnsim::results {

namespace {

/// Owns an HDF5 identifier and closes it with the matching function.
class Handle {
public:
    using Closer = herr_t (*)(hid_t);
    Handle(hid_t id, Closer close, const char* what) : id_(id), close_(close) {
        if (id_ < 0) {
            throw std::runtime_error(std::string("HDF5: cannot ") + what);
        }
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
    ~Handle() {
        if (id_ >= 0) {
            close_(id_);
        }
    }
    hid_t get() const { return id_; }

private:
    hid_t id_;
    Closer close_;
};

void check(herr_t status, const char* what) {
    if (status < 0) {
        throw std::runtime_error(std::string("HDF5: cannot ") + what);
    }
}

/// Silences HDF5's own error printing for the lifetime of the object; trnsim reports errors.
class QuietErrors {
public:
    QuietErrors() {
        H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
        H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    }
    QuietErrors(const QuietErrors&) = delete;
    QuietErrors& operator=(const QuietErrors&) = delete;
    ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

private:
    H5E_auto2_t func_ = nullptr;
    void* data_ = nullptr;
};

Handle vlen_string_type() {
    Handle t(H5Tcopy(H5T_C_S1), H5Tclose, "create a string type");
    check(H5Tset_size(t.get(), H5T_VARIABLE), "size a string type");
    check(H5Tset_cset(t.get(), H5T_CSET_UTF8), "set UTF-8");
    return Handle(H5Tcopy(t.get()), H5Tclose, "copy a string type");
}

void write_string_attribute(hid_t obj, const char* name, const std::string& value) {
    Handle type = vlen_string_type();
    Handle space(H5Screate(H5S_SCALAR), H5Sclose, "create a scalar space");
    Handle attr(H5Acreate2(obj, name, type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose, "create an attribute");
    const char* p = value.c_str();
    check(H5Awrite(attr.get(), type.get(), &p), "write an attribute");
}

void write_int_attribute(hid_t obj, const char* name, std::int64_t value) {
    Handle space(H5Screate(H5S_SCALAR), H5Sclose, "create a scalar space");
    Handle attr(H5Acreate2(obj, name, H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                H5Aclose, "create an attribute");
    check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value), "write an attribute");
}

Handle object_create_plist(hid_t cls) {
    Handle p(H5Pcreate(cls), H5Pclose, "create a property list");
    // No modification times: the same results give the same bytes.
    check(H5Pset_obj_track_times(p.get(), false), "disable time tracking");
    return Handle(H5Pcopy(p.get()), H5Pclose, "copy a property list");
}

/// Creates the groups on the way to `path` ("/step/breakdown" creates "/step").
void ensure_parents(hid_t file, const std::string& path) {
    std::size_t pos = 1;
    while ((pos = path.find('/', pos)) != std::string::npos) {
        const std::string group = path.substr(0, pos);
        if (H5Lexists(file, group.c_str(), H5P_DEFAULT) <= 0) {
            Handle gcpl = object_create_plist(H5P_GROUP_CREATE);
            Handle g(H5Gcreate2(file, group.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                     H5Gclose, "create a group");
        }
        ++pos;
    }
}

/// Tables of at least this many rows are written chunked and compressed; shorter ones stay
/// contiguous (compression would not pay for its chunk index).
constexpr std::size_t kCompressedRows = 4096;
/// zlib level: 4 compresses a timeline nearly as well as 9 in a fraction of the time.
constexpr unsigned kDeflateLevel = 1;

/// Whether this HDF5 library can write deflate- and shuffle-filtered datasets.
bool compression_available() {
    unsigned deflate = 0;
    unsigned shuffle = 0;
    return H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0 && H5Zfilter_avail(H5Z_FILTER_SHUFFLE) > 0 &&
           H5Zget_filter_info(H5Z_FILTER_DEFLATE, &deflate) >= 0 &&
           H5Zget_filter_info(H5Z_FILTER_SHUFFLE, &shuffle) >= 0 &&
           (deflate & H5Z_FILTER_CONFIG_ENCODE_ENABLED) != 0 &&
           (shuffle & H5Z_FILTER_CONFIG_ENCODE_ENABLED) != 0;
}

/// A chunk of `bytes` (whole rows of `row_size` bytes, the last chunk padded with zeros to its
/// full size as HDF5 stores it) through the filters the dataset declares: shuffle (byte j of
/// every element side by side), then deflate at kDeflateLevel, as HDF5's own filters would.
std::vector<unsigned char> filtered_chunk(const unsigned char* data, std::size_t bytes,
                                          std::size_t chunk_bytes, std::size_t row_size) {
    std::vector<unsigned char> shuffled(chunk_bytes, 0);
    const std::size_t n = chunk_bytes / row_size;
    const std::size_t present = bytes / row_size; // the rest is padding: zeros
    // In blocks of elements, so that both the rows read and the byte planes written stay in
    // cache.
    constexpr std::size_t kBlock = 64;
    for (std::size_t e0 = 0; e0 < present; e0 += kBlock) {
        const std::size_t e1 = std::min(present, e0 + kBlock);
        for (std::size_t j = 0; j < row_size; ++j) {
            unsigned char* plane = shuffled.data() + j * n;
            for (std::size_t e = e0; e < e1; ++e) {
                plane[e] = data[e * row_size + j];
            }
        }
    }
    uLongf size = compressBound(static_cast<uLong>(chunk_bytes));
    std::vector<unsigned char> out(size);
    if (compress2(out.data(), &size, shuffled.data(), static_cast<uLong>(chunk_bytes),
                  static_cast<int>(kDeflateLevel)) != Z_OK) {
        throw std::runtime_error("results: deflating a chunk failed");
    }
    out.resize(size);
    out.shrink_to_fit(); // every chunk is held until the writing: keep only its bytes
    return out;
}

void write_table(hid_t file, const std::string& path, const Table& table, int threads) {
    std::size_t row_size = 0;
    std::vector<std::size_t> offsets;
    for (const auto& c : table.columns()) {
        offsets.push_back(row_size);
        row_size += c.type == Table::Type::string ? static_cast<std::size_t>(c.string_width) : 8;
    }
    if (row_size == 0) {
        throw std::runtime_error("results: table " + path + " has no columns");
    }
    Handle type(H5Tcreate(H5T_COMPOUND, row_size), H5Tclose, "create a compound type");
    std::vector<std::unique_ptr<Handle>> string_types;
    for (std::size_t i = 0; i < table.columns().size(); ++i) {
        const auto& c = table.columns()[i];
        hid_t member = H5T_IEEE_F64LE;
        if (c.type == Table::Type::int64) {
            member = H5T_STD_I64LE;
        } else if (c.type == Table::Type::string) {
            auto st = std::make_unique<Handle>(H5Tcopy(H5T_C_S1), H5Tclose, "copy a string type");
            check(H5Tset_size(st->get(), static_cast<std::size_t>(c.string_width)),
                  "size a string type");
            check(H5Tset_strpad(st->get(), H5T_STR_NULLPAD), "pad a string type");
            member = st->get();
            string_types.push_back(std::move(st));
        }
        check(H5Tinsert(type.get(), c.name.c_str(), offsets[i], member), "add a column");
    }
    std::vector<unsigned char> buffer(row_size * table.rows(), 0);
    for (std::size_t r = 0; r < table.rows(); ++r) {
        unsigned char* row = buffer.data() + r * row_size;
        for (std::size_t i = 0; i < table.columns().size(); ++i) {
            const auto& c = table.columns()[i];
            unsigned char* dst = row + offsets[i];
            switch (c.type) {
            case Table::Type::int64:
                std::memcpy(dst, &c.ints[r], 8);
                break;
            case Table::Type::float64:
                std::memcpy(dst, &c.floats[r], 8);
                break;
            case Table::Type::string:
                std::memcpy(dst, c.strings[r].data(), c.strings[r].size());
                break;
            }
        }
    }
    ensure_parents(file, path);
    const hsize_t dims[1] = {static_cast<hsize_t>(table.rows())};
    Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose, "create a data space");
    Handle dcpl = object_create_plist(H5P_DATASET_CREATE);
    const bool compressed = table.rows() >= kCompressedRows && compression_available();
    std::size_t chunk_rows = 0;
    if (compressed) {
        // Long tables (per-event timelines) in chunks of about 1 MiB, each shuffled (the
        // bytes of a column's values side by side) and deflated: timelines are repetitive.
        chunk_rows =
            std::clamp<std::size_t>((std::size_t{1} << 20) / row_size, 1, table.rows());
        const hsize_t chunk[1] = {static_cast<hsize_t>(chunk_rows)};
        check(H5Pset_chunk(dcpl.get(), 1, chunk), "chunk a dataset");
        check(H5Pset_shuffle(dcpl.get()), "shuffle a dataset");
        check(H5Pset_deflate(dcpl.get(), kDeflateLevel), "compress a dataset");
    }
    Handle ds(H5Dcreate2(file, path.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                         H5P_DEFAULT),
              H5Dclose, "create a dataset");
    if (table.rows() == 0) {
        return;
    }
    if (!compressed) {
        check(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
              "write a dataset");
        return;
    }
    // The chunks filtered side by side on the run's threads, then written in order as they
    // are (the same bytes HDF5's filter pipeline would write, whatever the thread count).
    const std::size_t chunks = (table.rows() + chunk_rows - 1) / chunk_rows;
    const std::size_t chunk_bytes = chunk_rows * row_size;
    std::vector<std::vector<unsigned char>> filtered(chunks);
    parallel_for(chunks, std::max(1, threads), [&](std::size_t c, int) {
        const std::size_t first = c * chunk_bytes;
        filtered[c] = filtered_chunk(buffer.data() + first,
                                     std::min(chunk_bytes, buffer.size() - first), chunk_bytes,
                                     row_size);
    });
    for (std::size_t c = 0; c < chunks; ++c) {
        const hsize_t offset[1] = {static_cast<hsize_t>(c * chunk_rows)};
        check(H5Dwrite_chunk(ds.get(), H5P_DEFAULT, 0, offset, filtered[c].size(),
                             filtered[c].data()),
              "write a chunk");
    }
}

void write_text(hid_t file, const std::string& path, const std::string& text) {
    ensure_parents(file, path);
    Handle type = vlen_string_type();
    Handle space(H5Screate(H5S_SCALAR), H5Sclose, "create a scalar space");
    Handle dcpl = object_create_plist(H5P_DATASET_CREATE);
    Handle ds(H5Dcreate2(file, path.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                         H5P_DEFAULT),
              H5Dclose, ("create " + path).c_str());
    const char* p = text.c_str();
    check(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p),
          ("write " + path).c_str());
}

void write_meta(hid_t file, const Meta& meta) {
    Handle gcpl = object_create_plist(H5P_GROUP_CREATE);
    Handle group(H5Gcreate2(file, "/meta", H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), H5Gclose,
                 "create /meta");
    write_int_attribute(group.get(), "schema_version", kSchemaVersion);
    write_string_attribute(group.get(), "trnsim_version", meta.trnsim_version);
    write_string_attribute(group.get(), "name", meta.name);
    write_int_attribute(group.get(), "seed", meta.seed);
    write_int_attribute(group.get(), "threads", meta.threads);

    Handle type = vlen_string_type();
    Handle space(H5Screate(H5S_SCALAR), H5Sclose, "create a scalar space");
    Handle dcpl = object_create_plist(H5P_DATASET_CREATE);
    Handle ds(H5Dcreate2(file, "/meta/scenario", type.get(), space.get(), H5P_DEFAULT, dcpl.get(),
                         H5P_DEFAULT),
              H5Dclose, "create /meta/scenario");
    const char* p = meta.scenario_yaml.c_str();
    check(H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p),
          "write /meta/scenario");
}

} // namespace

PendingFile stage_hdf5(const std::string& path, const ResultsFile& file) {
    const QuietErrors quiet;
    PendingFile pending(path);
    const std::string& tmp = pending.temporary();
    {
        Handle fcpl = object_create_plist(H5P_FILE_CREATE);
        Handle f(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, fcpl.get(), H5P_DEFAULT), H5Fclose,
                 ("create '" + tmp + "'").c_str());
        write_meta(f.get(), file.meta);
        const int threads = static_cast<int>(std::clamp<std::int64_t>(file.meta.threads, 1, 64));
        write_table(f.get(), "/summary", file.summary, threads);
        for (const auto& [name, table] : file.tables) {
            write_table(f.get(), name, table, threads);
        }
        for (const auto& [name, text] : file.texts) {
            write_text(f.get(), name, text);
        }
        check(H5Fflush(f.get(), H5F_SCOPE_GLOBAL), "flush the file");
    }
    pending.complete();
    return pending;
}

void write_hdf5(const std::string& path, const ResultsFile& file) {
    stage_hdf5(path, file).commit();
}

Table read_summary(const std::string& path) { return read_table(path, "/summary"); }

namespace {

/// Opens a results file for reading. Only a regular file is opened: HDF5 would wait forever
/// on a FIFO with no writer and read a device without end.
Handle open_results(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                           : S_ISFIFO(st.st_mode) ? "a FIFO"
                           : S_ISCHR(st.st_mode)  ? "a character device"
                           : S_ISBLK(st.st_mode)  ? "a block device"
                           : S_ISSOCK(st.st_mode) ? "a socket"
                                                  : "a special file";
        throw std::runtime_error("'" + path + "' is " + kind +
                                 ", not a regular file; only regular files are read");
    }
    return Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose,
                  ("open '" + path + "'").c_str());
}

const char* class_name(H5T_class_t c) {
    switch (c) {
    case H5T_INTEGER:
        return "integer";
    case H5T_FLOAT:
        return "float";
    case H5T_STRING:
        return "string";
    case H5T_COMPOUND:
        return "compound";
    case H5T_ENUM:
        return "enum";
    case H5T_ARRAY:
        return "array";
    case H5T_VLEN:
        return "variable-length sequence";
    case H5T_REFERENCE:
        return "reference";
    case H5T_OPAQUE:
        return "opaque";
    case H5T_BITFIELD:
        return "bitfield";
    default:
        return "unknown";
    }
}

} // namespace

std::optional<std::string> read_text(const std::string& path, const std::string& dataset) {
    const QuietErrors quiet;
    Handle f = open_results(path);
    if (H5Lexists(f.get(), dataset.c_str(), H5P_DEFAULT) <= 0) {
        return std::nullopt;
    }
    Handle ds(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose,
              ("open " + dataset).c_str());
    Handle space(H5Dget_space(ds.get()), H5Sclose, "read a data space");
    Handle file_type(H5Dget_type(ds.get()), H5Tclose, ("read the type of " + dataset).c_str());
    // One string: reading more elements into one pointer would write past it.
    if (H5Sget_simple_extent_npoints(space.get()) != 1 ||
        H5Tget_class(file_type.get()) != H5T_STRING) {
        throw std::runtime_error(dataset + " is not a single string (a text dataset)");
    }
    Handle type = vlen_string_type();
    char* p = nullptr;
    check(H5Dread(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &p),
          ("read " + dataset).c_str());
    std::string text = p != nullptr ? p : "";
    H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, &p);
    return text;
}

Table read_table(const std::string& path, const std::string& dataset) {
    const QuietErrors quiet;
    Handle f = open_results(path);
    if (H5Lexists(f.get(), dataset.c_str(), H5P_DEFAULT) <= 0) {
        throw std::runtime_error("results: '" + path + "' has no dataset " + dataset);
    }
    Handle ds(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose,
              ("open " + dataset).c_str());
    Handle type(H5Dget_type(ds.get()), H5Tclose, ("read the type of " + dataset).c_str());
    Handle space(H5Dget_space(ds.get()), H5Sclose, ("read the space of " + dataset).c_str());
    // A table is a one-dimensional dataset of compound rows; anything else is refused before
    // a byte is read (a 2-D dataset was read into a buffer sized for its first dimension).
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if (rank != 1) {
        throw std::runtime_error(dataset + " is a " + std::to_string(rank) +
                                 "-dimensional dataset, not a table (one row per entry)");
    }
    if (H5Tget_class(type.get()) != H5T_COMPOUND) {
        throw std::runtime_error(dataset + " holds " + class_name(H5Tget_class(type.get())) +
                                 " values, not rows of named columns (a compound dataset)");
    }
    hsize_t dims[1] = {0};
    check(H5Sget_simple_extent_dims(space.get(), dims, nullptr) < 0 ? -1 : 0, "read dims");
    const int n = H5Tget_nmembers(type.get());
    check(n < 0 ? -1 : 0, "read the columns");
    // The rows are read into a memory type of trnsim's own (int64, double, a fixed string of
    // the file's width or a char* for a variable-length one), whatever widths the file has.
    struct Member {
        std::string name;
        Table::Type type;
        std::size_t offset; ///< in the memory row
        std::size_t size;   ///< bytes of a fixed string
        bool vlen = false;  ///< a variable-length string (char*)
        H5T_cset_t cset = H5T_CSET_ASCII; ///< a string's: HDF5 converts none to another
    };
    std::vector<Member> members;
    std::vector<std::unique_ptr<Handle>> string_types;
    std::size_t row_size = 0;
    for (int i = 0; i < n; ++i) {
        char* name = H5Tget_member_name(type.get(), static_cast<unsigned>(i));
        const std::string column(name != nullptr ? name : "");
        H5free_memory(name);
        Handle mt(H5Tget_member_type(type.get(), static_cast<unsigned>(i)), H5Tclose,
                  "read a member type");
        const H5T_class_t cls = H5Tget_class(mt.get());
        Member m{column, Table::Type::float64, row_size, 8};
        if (cls == H5T_INTEGER) {
            m.type = Table::Type::int64;
        } else if (cls == H5T_STRING) {
            m.type = Table::Type::string;
            m.vlen = H5Tis_variable_str(mt.get()) > 0;
            m.cset = H5Tget_cset(mt.get());
            m.size = m.vlen ? sizeof(char*) : H5Tget_size(mt.get());
        } else if (cls != H5T_FLOAT) {
            throw std::runtime_error("column '" + column + "' of " + dataset + " holds " +
                                     class_name(cls) +
                                     " values; a table's columns are integers, floats or "
                                     "strings");
        }
        members.push_back(m);
        row_size += m.size;
    }
    if (members.empty()) {
        throw std::runtime_error(dataset + " has no columns");
    }
    Handle memory(H5Tcreate(H5T_COMPOUND, row_size), H5Tclose, "create a compound type");
    for (const Member& m : members) {
        hid_t member = m.type == Table::Type::int64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
        if (m.type == Table::Type::string) {
            auto st = std::make_unique<Handle>(H5Tcopy(H5T_C_S1), H5Tclose, "copy a string type");
            check(H5Tset_size(st->get(), m.vlen ? H5T_VARIABLE : m.size), "size a string type");
            check(H5Tset_cset(st->get(), m.cset), "set a string type's character set");
            if (!m.vlen) {
                check(H5Tset_strpad(st->get(), H5T_STR_NULLPAD), "pad a string type");
            }
            member = st->get();
            string_types.push_back(std::move(st));
        }
        check(H5Tinsert(memory.get(), m.name.c_str(), m.offset, member), "add a column");
    }
    std::vector<unsigned char> buffer(row_size * dims[0]);
    if (dims[0] > 0) {
        check(H5Dread(ds.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
              ("read " + dataset).c_str());
    }
    // Strings first (a column's width is its longest value), then the table row by row.
    std::vector<std::vector<std::string>> strings(members.size());
    for (std::size_t c = 0; c < members.size(); ++c) {
        const Member& m = members[c];
        if (m.type != Table::Type::string) {
            continue;
        }
        for (hsize_t r = 0; r < dims[0]; ++r) {
            const unsigned char* at = buffer.data() + r * row_size + m.offset;
            if (m.vlen) {
                const char* p = nullptr;
                std::memcpy(&p, at, sizeof p);
                strings[c].emplace_back(p != nullptr ? p : "");
            } else {
                std::string s(reinterpret_cast<const char*>(at), m.size);
                s.resize(std::strlen(s.c_str()));
                strings[c].push_back(std::move(s));
            }
        }
    }
    if (dims[0] > 0 && std::any_of(members.begin(), members.end(),
                                   [](const Member& m) { return m.vlen; })) {
        H5Dvlen_reclaim(memory.get(), space.get(), H5P_DEFAULT, buffer.data());
    }
    Table t;
    for (std::size_t c = 0; c < members.size(); ++c) {
        const Member& m = members[c];
        if (m.type == Table::Type::int64) {
            t.add_int(m.name);
        } else if (m.type == Table::Type::float64) {
            t.add_float(m.name);
        } else {
            std::size_t width = m.vlen ? 1 : std::max<std::size_t>(m.size, 1);
            for (const std::string& s : strings[c]) {
                width = std::max(width, s.size());
            }
            t.add_string(m.name, static_cast<int>(width));
        }
    }
    for (hsize_t r = 0; r < dims[0]; ++r) {
        std::vector<Table::Value> row;
        const unsigned char* base = buffer.data() + r * row_size;
        for (std::size_t c = 0; c < members.size(); ++c) {
            const Member& m = members[c];
            if (m.type == Table::Type::int64) {
                std::int64_t v = 0;
                std::memcpy(&v, base + m.offset, 8);
                row.emplace_back(v);
            } else if (m.type == Table::Type::float64) {
                double v = 0.0;
                std::memcpy(&v, base + m.offset, 8);
                row.emplace_back(v);
            } else {
                row.emplace_back(strings[c][r]);
            }
        }
        t.add_row(row);
    }
    return t;
}

} // namespace trnsim::results
