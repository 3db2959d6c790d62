#include "trnsim/compute/core_program.hpp"

#include "trnsim/core/assert.hpp"
#include "trnsim/core/error.hpp"

#include "instruction_costs.hpp"

#include <algorithm>

namespace trnsim::compute {

Queue queue_of(Unit u) {
    switch (u) {
    case Unit::tensor_load:
    case Unit::tensor_array:
        return Queue::tensor;
    case Unit::vector:
        return Queue::vector;
    case Unit::scalar:
        return Queue::scalar;
    case Unit::gpsimd:
        return Queue::gpsimd;
    case Unit::dma0:
        return Queue::dma0;
    case Unit::dma1:
        return Queue::dma1;
    case Unit::dma2:
        return Queue::dma2;
    case Unit::dma3:
        return Queue::dma3;
    }
    return Queue::vector;
}

const char* to_string(Unit u) {
    switch (u) {
    case Unit::tensor_load:
        return "TensorE load";
    case Unit::tensor_array:
        return "TensorE";
    case Unit::vector:
        return "VectorE";
    case Unit::scalar:
        return "ScalarE";
    case Unit::gpsimd:
        return "GpSimdE";
    case Unit::dma0:
        return "DMA queue 0";
    case Unit::dma1:
        return "DMA queue 1";
    case Unit::dma2:
        return "DMA queue 2";
    case Unit::dma3:
        return "DMA queue 3";
    }
    return "?";
}

bool in_order(Unit u) {
    return u != Unit::vector && u != Unit::scalar && u != Unit::gpsimd;
}

ProgramBuilder::ProgramBuilder(const ChipSpec& chip) : chip_(&chip) {}

ProgramBuilder::PoolId ProgramBuilder::sbuf_pool(std::int64_t bytes_per_partition, int bufs) {
    TRNSIM_CHECK(bufs >= 1 && bytes_per_partition >= 0, "bad SBUF pool");
    Pool p;
    p.first = static_cast<Buffer>(slots_.size());
    p.slots = static_cast<std::uint32_t>(bufs);
    slots_.resize(slots_.size() + p.slots);
    pools_.push_back(p);
    sbuf_bytes_ += bytes_per_partition * bufs;
    return static_cast<PoolId>(pools_.size() - 1);
}

ProgramBuilder::PoolId ProgramBuilder::psum_pool(int banks) {
    TRNSIM_CHECK(banks >= 1, "bad PSUM pool");
    Pool p;
    p.first = static_cast<Buffer>(slots_.size());
    p.slots = static_cast<std::uint32_t>(banks);
    slots_.resize(slots_.size() + p.slots);
    pools_.push_back(p);
    psum_banks_ += banks;
    return static_cast<PoolId>(pools_.size() - 1);
}

ProgramBuilder::Buffer ProgramBuilder::alloc(PoolId pool) {
    Pool& p = pools_.at(pool);
    const Buffer b = p.first + p.next;
    p.next = (p.next + 1) % p.slots;
    return b;
}

bool ProgramBuilder::fits() const {
    return sbuf_bytes_ <= chip_->core.sbuf_partition_bytes() &&
           psum_banks_ <= chip_->core.psum_banks;
}

ProgramBuilder::Id ProgramBuilder::add(Instruction ins, std::span<const Buffer> reads,
                                       std::span<const Buffer> writes, Id extra) {
    if (static_cast<std::int64_t>(program_.instructions.size()) >= kMaxProgramInstructions) {
        throw InputError("kernel", "the kernel needs more than " +
                                       std::to_string(kMaxProgramInstructions) +
                                       " instructions on one core; the detailed model simulates "
                                       "at most " + std::to_string(kMaxProgramInstructions) +
                                       " (give a smaller shape)");
    }
    const Id id = static_cast<Id>(program_.instructions.size());
    // The last instruction this one waits for on each in-order unit, and every instruction on
    // the scheduled units.
    std::array<Id, kUnitCount> wait;
    wait.fill(kNone);
    std::vector<Id>& scheduled = scratch_;
    scheduled.clear();
    const auto need = [&](Id dep) {
        if (dep == kNone) {
            return;
        }
        const Unit u = program_.instructions[dep].unit;
        if (!in_order(u)) {
            scheduled.push_back(dep);
            return;
        }
        const auto ui = static_cast<std::size_t>(u);
        if (wait[ui] == kNone || dep > wait[ui]) {
            wait[ui] = dep;
        }
    };
    need(extra);
    for (Buffer b : reads) {
        need(slots_.at(b).writer);
    }
    for (Buffer b : writes) {
        const Slot& s = slots_.at(b);
        need(s.writer);
        for (Id r : s.readers) {
            need(r);
        }
        for (Id r : s.scheduled_readers) {
            need(r);
        }
    }
    // In-order execution implies the dependencies on the instruction's own in-order unit.
    if (in_order(ins.unit)) {
        wait[static_cast<std::size_t>(ins.unit)] = kNone;
    }
    ins.dep_begin = static_cast<std::uint32_t>(program_.deps.size());
    for (Id w : wait) {
        if (w != kNone) {
            program_.deps.push_back(w);
        }
    }
    std::sort(scheduled.begin(), scheduled.end());
    scheduled.erase(std::unique(scheduled.begin(), scheduled.end()), scheduled.end());
    program_.deps.insert(program_.deps.end(), scheduled.begin(), scheduled.end());
    TRNSIM_CHECK(program_.deps.size() - ins.dep_begin <= 0xffff, "too many dependencies");
    ins.dep_count = static_cast<std::uint16_t>(program_.deps.size() - ins.dep_begin);
    program_.instructions.push_back(ins);

    const auto unit = static_cast<std::size_t>(ins.unit);
    for (Buffer b : reads) {
        if (in_order(ins.unit)) {
            slots_[b].readers[unit] = id;
        } else {
            slots_[b].scheduled_readers.push_back(id);
        }
    }
    for (Buffer b : writes) {
        Slot& s = slots_[b];
        s.writer = id;
        s.readers.fill(kNone);
        s.scheduled_readers.clear();
    }
    return id;
}

ProgramBuilder::Id ProgramBuilder::dma(int queue, double bytes, std::int64_t descriptors,
                                       Direction dir, std::span<const Buffer> reads,
                                       std::span<const Buffer> writes) {
    TRNSIM_CHECK(queue >= 0 && queue < kDmaQueues && descriptors >= 1 && bytes > 0.0, "bad DMA");
    Instruction ins;
    ins.op = Op::dma;
    ins.unit = static_cast<Unit>(static_cast<int>(Unit::dma0) + queue);
    ins.hbm = dir != Direction::sbuf_to_sbuf;
    ins.amount = bytes;
    ins.descriptors = static_cast<std::uint32_t>(descriptors);
    if (dir == Direction::hbm_to_sbuf) {
        program_.hbm_read_bytes += bytes;
    } else if (dir == Direction::sbuf_to_hbm) {
        program_.hbm_write_bytes += bytes;
    }
    return add(ins, reads, writes);
}

ProgramBuilder::Id ProgramBuilder::load_stationary(std::int64_t cols, Precision p,
                                                   Buffer source) {
    Instruction ins;
    ins.op = Op::load_stationary;
    ins.unit = Unit::tensor_load;
    ins.amount = static_cast<double>(detail::load_stationary_cycles(*chip_, cols, p));
    const Buffer src[] = {source};
    return add(ins, src, {});
}

ProgramBuilder::Id ProgramBuilder::multiply_moving(std::int64_t cols, Precision p, Id stationary,
                                                   Buffer moving, Buffer out) {
    Instruction ins;
    ins.op = Op::multiply_moving;
    ins.unit = Unit::tensor_array;
    ins.amount = static_cast<double>(detail::multiply_moving_cycles(*chip_, cols, p));
    // The accumulation reads and writes its PSUM bank.
    const Buffer reads[] = {moving, out};
    const Buffer writes[] = {out};
    return add(ins, reads, writes, stationary);
}

ProgramBuilder::Id ProgramBuilder::engine(Queue q, std::int64_t free_elements, int tensor_inputs,
                                          std::span<const Buffer> reads,
                                          std::span<const Buffer> writes, VectorMode mode) {
    TRNSIM_CHECK(q == Queue::vector || q == Queue::scalar || q == Queue::gpsimd, "not an engine queue");
    Instruction ins;
    ins.op = Op::engine;
    ins.unit = q == Queue::vector ? Unit::vector : q == Queue::scalar ? Unit::scalar : Unit::gpsimd;
    ins.amount =
        static_cast<double>(detail::engine_cycles(*chip_, q, free_elements, tensor_inputs, mode));
    return add(ins, reads, writes);
}

Program ProgramBuilder::finish(double flops, std::string description) {
    Program p = std::move(program_);
    p.sbuf_bytes = sbuf_bytes_;
    p.psum_banks = psum_banks_;
    p.flops = flops;
    p.description = std::move(description);
    program_ = Program{};
    pools_.clear();
    slots_.clear();
    sbuf_bytes_ = 0;
    psum_banks_ = 0;
    return p;
}

} // namespace trnsim::compute
